package privacy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/privacy"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestCleanerOneInstanceAtATime: of two cleaners on one lease only the
// holder sweeps, until it gives the lease up; a sweep deletes what is past
// retention.max_age or a conversation's own shorter retention, in batches,
// and nothing younger; a sweep whose lease is lost stops.
func TestCleanerOneInstanceAtATime(t *testing.T) {
	db := storetest.SQLite(t)
	rdb, prefix := storetest.Redis(t)
	ctx := context.Background()
	msgs, repo := store.NewMessageRepo(db), store.NewPrivacyRepo(db)
	now := time.Now()
	old, recent := now.Add(-2*time.Hour).UnixMilli(), now.Add(-30*time.Minute).UnixMilli()
	var batch []domain.Message
	add := func(a, b string, seq int64, at int64) {
		batch = append(batch, domain.Message{ServerMsgID: fmt.Sprint(a, b, seq), ClientMsgID: fmt.Sprint(a, b, seq),
			ConversationID: domain.SingleConversationID(a, b), Seq: seq, SenderID: a, RecvID: b, SessionType: domain.SessionSingle,
			MsgType: domain.MsgText, Content: domain.Content{Text: "x"}, Status: domain.StatusNormal, SendAt: at})
	}
	for seq := int64(1); seq <= 7; seq++ {
		add("ka", "kb", seq, old) // past max_age (1 h)
		add("sa", "sb", seq, recent)
	}
	add("ka", "kb", 8, recent)
	add("sa", "sb", 8, now.UnixMilli())
	if _, err := msgs.SaveBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	short := domain.SingleConversationID("sa", "sb")
	if err := repo.SetRetention(ctx, short, (10 * time.Minute).Milliseconds(), "sa"); err != nil {
		t.Fatal(err)
	}
	svc := privacy.NewService(privacy.Deps{Config: privacy.Config{MaxAge: time.Hour}, Store: repo, Log: quiet})

	if res, err := svc.Sweep(ctx, now, 2, func(context.Context) bool { return false }); err == nil || res.Deleted != 0 {
		t.Fatalf("a sweep without the lease: %+v %v", res, err)
	}
	lease := store.NewLease(rdb, store.Keys{Prefix: prefix}, "retention")
	cfg := privacy.CleanerConfig{Interval: time.Hour, Batch: 2}
	c1 := privacy.NewCleaner(svc, lease, "n1", cfg, quiet)
	c2 := privacy.NewCleaner(svc, lease, "n2", cfg, quiet)
	if !c1.Once(ctx) {
		t.Fatal("the first cleaner did not take the free lease")
	}
	if res := <-c1.Swept(); res.Deleted != 14 {
		t.Fatalf("deleted %d, want the 7 past max_age and the 7 past the conversation's 10 minutes", res.Deleted)
	}
	if c2.Once(ctx) {
		t.Fatal("the second cleaner swept while the first holds the lease")
	}
	for conv, want := range map[string][]int64{domain.SingleConversationID("ka", "kb"): {8}, short: {8}} {
		left, err := msgs.Range(ctx, conv, 1, 100, 100)
		if err != nil || len(left) != len(want) || left[0].Seq != want[0] {
			t.Fatalf("left in %s: %v %v", conv, left, err)
		}
	}
	if err := lease.Release(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if !c2.Once(ctx) {
		t.Fatal("the second cleaner did not take the released lease")
	}
	if res := <-c2.Swept(); res.Deleted != 0 {
		t.Fatalf("a second sweep deleted %d unexpired messages", res.Deleted)
	}
}
