package streams

import "testing"

// BenchmarkKeys builds the idempotency key, as every accept does.
func BenchmarkKeys(b *testing.B) {
	k := NewKeys("nexo", 8)
	b.ReportAllocs()
	for b.Loop() {
		_ = k.Idem(3, "user-123456", "0f8fad5b-d9cb-469f-a165-70867728950e")
	}
}

// TestKeyNames pins the key names: operators' tooling, the Lua scripts'
// hash tags and data already in Redis all depend on them.
func TestKeyNames(t *testing.T) {
	k := NewKeys("nexo", 128)
	for got, want := range map[string]string{
		k.ToSave(3):              "nexo:{s3}:to_save",
		k.ToDeliver(12):          "nexo:{s12}:to_deliver",
		k.Dead(127):              "nexo:{s127}:dead",
		k.Idem(5, "u1", "c:1"):   "nexo:{s5}:idem:u1:c:1",
		k.Seq(0, "si_u1_u2"):     "nexo:{s0}:seq:si_u1_u2",
		k.InFlight(101, "sg_g1"): "nexo:{s101}:pend:sg_g1",
		k.Owner(7):               "nexo:{s7}:owner",
		k.Epoch(7):               "nexo:{s7}:epoch",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}
