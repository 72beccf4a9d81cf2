package cluster

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/streams"
)

// TestInboxNoConnectionCountsOnlyMisses: a push from the inbox counts a
// recipient with no connection here, not a sender whose only connection
// here is the one the push excepts (its own sending connection).
func TestInboxNoConnectionCountsOnlyMisses(t *testing.T) {
	local := newFakeLocal("alice", "bob")
	local.conn = map[string]string{"alice": "conn-a"}
	r, err := NewRelay(Deps{Local: local, Presence: fakePresence{}, Members: &fakeMembers{}, Bus: &streams.Bus{}})
	if err != nil {
		t.Fatal(err)
	}
	r.pushLocal(context.Background(), streams.BusPush{Users: []string{"alice", "bob", "gone"}, Except: "conn-a", Frame: []byte(`{}`)})
	if got := testutil.ToFloat64(r.m.noConn); got != 1 {
		t.Fatalf("inbox_no_connection = %v, want 1 (only the user with no connection here)", got)
	}
	r.pushLocal(context.Background(), streams.BusPush{Users: []string{"alice"}, Frame: []byte(`{}`)})
	if got := testutil.ToFloat64(r.m.noConn); got != 1 || len(local.got["alice"]) != 1 {
		t.Fatalf("inbox_no_connection = %v, alice got %d frames", got, len(local.got["alice"]))
	}
}
