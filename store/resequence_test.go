package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// retireLog records Resequence's retires and what it had saved at each;
// fail makes every retire fail (Redis unreachable).
type retireLog struct {
	msgs    *store.MessageRepo
	fail    error
	retired []int64
	saved   []bool // whether the retired seq was already saved
}

func (r *retireLog) Retire(ctx context.Context, conversationID string, seq int64) error {
	got, _ := r.msgs.BySeqs(ctx, conversationID, []int64{seq})
	r.retired, r.saved = append(r.retired, seq), append(r.saved, len(got) > 0)
	return r.fail
}

// takenLeaser leases seq 2 every time: a database whose ceiling fell
// below the saved seqs.
type takenLeaser struct{}

func (takenLeaser) Lease(_ context.Context, conversationID string, _ int64) (domain.SeqLease, error) {
	return domain.SeqLease{ConversationID: conversationID, Base: 1, Ceiling: 2}, nil
}

// TestResequence: a message whose seq another holds is saved at a fresh
// seq leased above the database's ceiling, with the Redis allocator retired
// above it before the save; a failed retire is reported, the save done all
// the same; a fresh seq that is taken too is tried three times, then
// ErrSeqTakenAgain.
func TestResequence(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			storetest.AddUsers(t, db, "alice", "bob")
			msgs, seqs := store.NewMessageRepo(db), store.NewSeqRepo(db)
			ctx := context.Background()
			conv := domain.SingleConversationID("alice", "bob")
			if _, err := seqs.Lease(ctx, conv, 5); err != nil { // Redis's block: seqs 1-5
				t.Fatal(err)
			}
			if _, err := msgs.SaveBatch(ctx, []domain.Message{textMsg("alice", "bob", "c1", 2)}); err != nil {
				t.Fatal(err)
			}
			clash := textMsg("bob", "alice", "c2", 2) // seq 2 handed out twice
			res, err := msgs.SaveBatch(ctx, []domain.Message{clash})
			if err != nil || res[0].Outcome != store.SeqTaken {
				t.Fatalf("clash: %+v %v, want SeqTaken", res, err)
			}

			alloc := &retireLog{msgs: msgs}
			r, notRetired, err := store.Resequence(ctx, msgs, seqs, alloc, &clash)
			if err != nil || notRetired != nil {
				t.Fatalf("resequence: %v (not retired: %v)", err, notRetired)
			}
			if clash.Seq != 6 || r.Outcome != store.Saved || r.Original.Seq != 6 || r.Original.ServerMsgID != clash.ServerMsgID {
				t.Fatalf("resequenced to %d: %+v, want saved at 6", clash.Seq, r)
			}
			if len(alloc.retired) != 1 || alloc.retired[0] != 6 || alloc.saved[0] {
				t.Fatalf("retires %v (saved first: %v), want 6 once, before the save", alloc.retired, alloc.saved)
			}
			if got, _ := msgs.BySeqs(ctx, conv, []int64{6}); len(got) != 1 || got[0].ClientMsgID != "c2" {
				t.Fatalf("seq 6 holds %+v", got)
			}

			// Redis unreachable: saved all the same, the retire's error back.
			down := errors.New("redis down")
			late := textMsg("bob", "alice", "c3", 2)
			r, notRetired, err = store.Resequence(ctx, msgs, seqs, &retireLog{msgs: msgs, fail: down}, &late)
			if err != nil || !errors.Is(notRetired, down) || r.Outcome != store.Saved || late.Seq != 7 {
				t.Fatalf("retire failing: %+v seq %d, not retired %v, err %v", r, late.Seq, notRetired, err)
			}

			// Every fresh seq taken as well.
			alloc = &retireLog{msgs: msgs}
			again := textMsg("bob", "alice", "c4", 2)
			if _, _, err := store.Resequence(ctx, msgs, takenLeaser{}, alloc, &again); !errors.Is(err, store.ErrSeqTakenAgain) || len(alloc.retired) != 3 {
				t.Fatalf("taken again: %v after %d tries, want ErrSeqTakenAgain after 3", err, len(alloc.retired))
			}
		})
	}
}
