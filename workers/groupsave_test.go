package workers

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// recordingSaver saves by echoing each message as its Original; a batch
// holding a message whose ServerMsgID is in bad fails whole.
type recordingSaver struct {
	calls [][]string // server_msg_ids per SaveBatch call
	bad   map[string]error
	short bool // answer one result too few
}

func (s *recordingSaver) SaveBatch(_ context.Context, msgs []domain.Message) ([]store.SaveResult, error) {
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.ServerMsgID)
	}
	s.calls = append(s.calls, ids)
	for _, m := range msgs {
		if err := s.bad[m.ServerMsgID]; err != nil {
			return nil, err
		}
	}
	res := make([]store.SaveResult, len(msgs))
	for i, m := range msgs {
		res[i] = store.SaveResult{Outcome: store.Saved, Original: m}
	}
	if s.short {
		res = res[:len(res)-1]
	}
	return res, nil
}

func (s *recordingSaver) SaveFailed(context.Context, domain.Message) error { return nil }

// calls builds one queued SaveBatch call per list of server_msg_ids.
func saveCalls(batches ...[]string) []*domain.Call[[]domain.Message, []store.SaveResult] {
	var out []*domain.Call[[]domain.Message, []store.SaveResult]
	for _, ids := range batches {
		c := &domain.Call[[]domain.Message, []store.SaveResult]{}
		for _, id := range ids {
			c.Req = append(c.Req, domain.Message{ServerMsgID: id})
		}
		out = append(out, c)
	}
	return out
}

// checkEchoed fails unless every call got its own messages back, in order.
func checkEchoed(t *testing.T, calls []*domain.Call[[]domain.Message, []store.SaveResult], skip int) {
	t.Helper()
	for i, c := range calls {
		if i == skip {
			continue
		}
		if c.Err != nil || len(c.Res) != len(c.Req) {
			t.Fatalf("call %d: %d results, err %v, want %d results", i, len(c.Res), c.Err, len(c.Req))
		}
		for j := range c.Req {
			if c.Res[j].Original.ServerMsgID != c.Req[j].ServerMsgID {
				t.Fatalf("call %d result %d is %s's, want %s's", i, j, c.Res[j].Original.ServerMsgID, c.Req[j].ServerMsgID)
			}
		}
	}
}

// TestGroupSaverMergesShardsIntoOneSave: the batches queued together are
// saved with one call, and each gets its own results back, in order.
func TestGroupSaverMergesShardsIntoOneSave(t *testing.T) {
	rec := &recordingSaver{}
	g := newGroupSaver(rec, 0, 0)
	calls := saveCalls([]string{"a1", "a2"}, []string{"b1"}, []string{"c1", "c2", "c3"})
	g.flush(context.Background(), calls)
	if want := [][]string{{"a1", "a2", "b1", "c1", "c2", "c3"}}; !slices.EqualFunc(rec.calls, want, slices.Equal) {
		t.Fatalf("saves %v, want %v", rec.calls, want)
	}
	checkEchoed(t, calls, -1)
	// A result slice must not reach into the next batch's results.
	if cap(calls[0].Res) != len(calls[0].Req) {
		t.Fatalf("first batch's results have capacity %d, want %d", cap(calls[0].Res), len(calls[0].Req))
	}
}

// TestGroupSaverFailureStaysWithItsBatch: when the merged save fails, each
// batch is saved alone, so only the batch holding the bad row gets the
// error (and the save stage's bisection can find the row).
func TestGroupSaverFailureStaysWithItsBatch(t *testing.T) {
	bad := errors.New("data too long")
	rec := &recordingSaver{bad: map[string]error{"b2": bad}}
	g := newGroupSaver(rec, 0, 0)
	calls := saveCalls([]string{"a1"}, []string{"b1", "b2"}, []string{"c1"})
	g.flush(context.Background(), calls)
	want := [][]string{{"a1", "b1", "b2", "c1"}, {"a1"}, {"b1", "b2"}, {"c1"}}
	if !slices.EqualFunc(rec.calls, want, slices.Equal) {
		t.Fatalf("saves %v, want %v", rec.calls, want)
	}
	if !errors.Is(calls[1].Err, bad) || calls[1].Res != nil {
		t.Fatalf("bad batch: %v %v, want the error", calls[1].Res, calls[1].Err)
	}
	checkEchoed(t, calls, 1)
}

// TestGroupSaverRetryableFailureIsEveryBatchs: a database that is away
// is asked once, not once more per batch; every batch gets the error and
// its stage retries it.
func TestGroupSaverRetryableFailureIsEveryBatchs(t *testing.T) {
	away := errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")
	if !store.IsRetryable(away) {
		t.Fatal("the test's error is not retryable")
	}
	rec := &recordingSaver{bad: map[string]error{"a1": away}}
	calls := saveCalls([]string{"a1"}, []string{"b1"})
	newGroupSaver(rec, 0, 0).flush(context.Background(), calls)
	if len(rec.calls) != 1 {
		t.Fatalf("saves %v, want the merged one only", rec.calls)
	}
	for i, c := range calls {
		if !errors.Is(c.Err, away) {
			t.Fatalf("call %d: %v, want the retryable error", i, c.Err)
		}
	}
}

// TestGroupSaverKeepsSaveBatchPreconditions: batches sharing a
// server_msg_id (a reclaimed entry read twice) are not merged, and a
// merged answer of the wrong length is not split.
func TestGroupSaverKeepsSaveBatchPreconditions(t *testing.T) {
	rec := &recordingSaver{}
	g := newGroupSaver(rec, 0, 0)
	calls := saveCalls([]string{"a1", "x"}, []string{"x"})
	g.flush(context.Background(), calls)
	if want := [][]string{{"a1", "x"}, {"x"}}; !slices.EqualFunc(rec.calls, want, slices.Equal) {
		t.Fatalf("saves %v, want %v", rec.calls, want)
	}
	checkEchoed(t, calls, -1)

	rec = &recordingSaver{short: true}
	g = newGroupSaver(rec, 0, 0)
	calls = saveCalls([]string{"a1", "a2"}, []string{"b1", "b2"})
	g.flush(context.Background(), calls)
	if len(rec.calls) != 3 {
		t.Fatalf("saves %v, want the merged one and then one per batch", rec.calls)
	}
}

// TestGroupSaverLoneBatchGoesStraight: one batch is saved as it is.
func TestGroupSaverLoneBatchGoesStraight(t *testing.T) {
	rec := &recordingSaver{}
	res, err := newGroupSaver(rec, 0, 0).SaveBatch(context.Background(), []domain.Message{{ServerMsgID: "a1"}})
	if err != nil || len(res) != 1 || len(rec.calls) != 1 {
		t.Fatalf("got %v %v after saves %v", res, err, rec.calls)
	}
}

// TestGroupSaverLingersForOtherShards: with save.batch_wait set, a batch
// that finds no save in flight waits for other shards' batches and goes
// with them as soon as save.batch_size messages wait (here long before the
// hour-long wait), and a batch that is full alone does not wait at all.
func TestGroupSaverLingersForOtherShards(t *testing.T) {
	rec := &recordingSaver{}
	g := newGroupSaver(rec, time.Hour, 3)
	done := make(chan error, 2)
	for _, ids := range [][]string{{"a1"}, {"b1", "b2"}} {
		go func() {
			var msgs []domain.Message
			for _, id := range ids {
				msgs = append(msgs, domain.Message{ServerMsgID: id})
			}
			res, err := g.SaveBatch(context.Background(), msgs)
			if err == nil && len(res) != len(msgs) {
				err = errors.New("wrong number of results")
			}
			done <- err
		}()
	}
	timeout := time.After(10 * time.Second)
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatal("the batches waited although together they filled save.batch_size")
		}
	}
	if len(rec.calls) != 1 || len(rec.calls[0]) != 3 {
		t.Fatalf("saves %v, want one of all three messages", rec.calls)
	}

	full := make(chan error, 1)
	go func() {
		_, err := g.SaveBatch(context.Background(), []domain.Message{{ServerMsgID: "c1"}, {ServerMsgID: "c2"}, {ServerMsgID: "c3"}})
		full <- err
	}()
	select {
	case err := <-full:
		if err != nil || len(rec.calls) != 2 {
			t.Fatalf("full batch: %v, saves %v", err, rec.calls)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch waited for others")
	}
}
