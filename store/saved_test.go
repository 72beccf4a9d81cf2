package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestSavedContract: Saved answers each saved (conversation, seq) with its
// server_msg_id and save time, and leaves out seqs never saved and failed
// placeholders.
func TestSavedContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			before := time.Now().UnixMilli()
			f := newSyncFixture(t, b)
			after := time.Now().UnixMilli()
			k := func(conv string, seq int64) store.SeqKey { return store.SeqKey{ConversationID: conv, Seq: seq} }
			got, err := f.convs.Saved(context.Background(), []store.SeqKey{k(f.ab, 2), k(f.ac, 1), k(f.g, 4), k(f.ab, 9)})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("Saved = %v, want si_alice_bob/2 and si_alice_carol/1 only (4 is a failed placeholder, 9 unsaved)", got)
			}
			for key, id := range map[store.SeqKey]string{k(f.ab, 2): f.ab + "/02", k(f.ac, 1): f.ac + "/01"} {
				ref := got[key]
				if ref.ServerMsgID != id || ref.SavedAt < before || ref.SavedAt > after {
					t.Errorf("%v = %+v, want %s saved within [%d, %d]", key, ref, id, before, after)
				}
			}
		})
	}
}
