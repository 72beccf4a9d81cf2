package domain

import "testing"

func TestSingleConversationIDsNeverCollide(t *testing.T) {
	pairs := [][2]string{{"a", "b_c"}, {"a_b", "c"}, {"alice", "bob"}, {"x", "x"}, {"a-b", "c_d_e"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		id := SingleConversationID(p[0], p[1])
		if id != SingleConversationID(p[1], p[0]) {
			t.Errorf("%v: not the same for both parties", p)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%v and %v share %s", p, other, id)
		}
		seen[id] = p
		a, b, ok := SingleParties(id)
		if !ok || !(a == p[0] && b == p[1] || a == p[1] && b == p[0]) {
			t.Errorf("%s split into %q %q %v", id, a, b, ok)
		}
		for _, u := range p {
			if peer, ok := SinglePeer(id, u); !ok || (peer != p[0] && peer != p[1]) {
				t.Errorf("%s: peer of %s = %q %v", id, u, peer, ok)
			}
		}
		if _, ok := SinglePeer(id, "mallory"); ok {
			t.Errorf("%s: an outsider is a party", id)
		}
	}
	if SingleConversationID("alice", "bob") != "si_alice_bob" {
		t.Error("IDs without '_' must keep the seed's form")
	}
	// Malformed, or not in byte order (so not what SingleConversationID builds).
	for _, bad := range []string{"si_", "si_a", "si_a_b_c", "sg_a", "si_b_a", "si_a_b c", "si_a_"} {
		if _, _, ok := SingleParties(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

// IsSingleConversationID agrees with SingleConversationID, whichever party
// comes first, "_" in IDs and near misses included.
func TestIsSingleConversationID(t *testing.T) {
	pairs := [][2]string{{"a", "b_c"}, {"a_b", "c"}, {"alice", "bob"}, {"x", "x"}, {"a-b", "c_d_e"}, {"", "b"}}
	for _, p := range pairs {
		id := SingleConversationID(p[0], p[1])
		if !IsSingleConversationID(id, p[0], p[1]) || !IsSingleConversationID(id, p[1], p[0]) {
			t.Errorf("%v: %q not recognised", p, id)
		}
		for _, other := range []string{id + "x", id[:len(id)-1], "sg_" + id[3:], "si_" + p[0], SingleConversationID(p[0], p[1]+"z")} {
			if IsSingleConversationID(other, p[0], p[1]) {
				t.Errorf("%v: %q taken for %q", p, other, id)
			}
		}
	}
}

func TestIsGroupConversationID(t *testing.T) {
	if !IsGroupConversationID(GroupConversationID("g_1"), "g_1") {
		t.Error("sg_g_1 not recognised as g_1's")
	}
	for _, id := range []string{"sg_g_12", "sg_g", "si_g_1", "g_1", ""} {
		if IsGroupConversationID(id, "g_1") {
			t.Errorf("%q taken for g_1's", id)
		}
	}
}
