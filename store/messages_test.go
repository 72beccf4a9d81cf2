package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func textMsg(sender, recv, clientID string, seq int64) domain.Message {
	return domain.Message{
		ServerMsgID: fmt.Sprintf("srv-%s-%s-%d", sender, clientID, seq), ClientMsgID: clientID,
		ConversationID: domain.SingleConversationID(sender, recv), Seq: seq, SenderID: sender, RecvID: recv,
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "hi " + clientID},
		AtUserIDs: []string{recv}, Status: domain.StatusNormal, SendAt: 1700000000000 + seq,
	}
}

func TestSeqLeaseContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repo := store.NewSeqRepo(b.Open(t))
			ctx := context.Background()
			l1, err := repo.Lease(ctx, "si_a_b", 100)
			if err != nil || l1.Base != 0 || l1.Ceiling != 100 {
				t.Fatalf("first lease %+v err %v", l1, err)
			}
			l2, err := repo.Lease(ctx, "si_a_b", 1)
			if err != nil || l2.Base != 100 || l2.Ceiling != 101 {
				t.Fatalf("second lease %+v err %v", l2, err)
			}
			// Concurrent leases never overlap.
			var mu sync.Mutex
			seen := map[int64]bool{}
			var wg sync.WaitGroup
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < 5; j++ {
						l, err := repo.Lease(ctx, "si_a_b", 10)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for s := l.Base + 1; s <= l.Ceiling; s++ {
							if seen[s] {
								t.Errorf("seq %d leased twice", s)
							}
							seen[s] = true
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if got, _ := repo.Reserved(ctx, "si_a_b"); got != 101+400 {
				t.Fatalf("reserved = %d, want 501", got)
			}
			if _, err := repo.Lease(ctx, "si_a_b", 0); err == nil {
				t.Fatal("zero block accepted")
			}
		})
	}
}

func TestSaveBatchContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			msgs := store.NewMessageRepo(db)
			seqs := store.NewSeqRepo(db)
			cur := store.NewCursorRepo(db)
			ctx := context.Background()

			batch := []domain.Message{textMsg("alice", "bob", "c1", 1), textMsg("alice", "bob", "c2", 2), textMsg("bob", "alice", "c1", 3)}
			res, err := msgs.SaveBatch(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if r.Outcome != store.Saved || r.Original.ServerMsgID != batch[i].ServerMsgID {
					t.Fatalf("result %d = %+v", i, r)
				}
			}
			// Redelivery of the same entries: still Saved, nothing new.
			res, err = msgs.SaveBatch(ctx, batch[:2])
			if err != nil || res[0].Outcome != store.Saved || res[1].Outcome != store.Saved {
				t.Fatalf("redelivery: %+v %v", res, err)
			}
			// A late duplicate: same (sender, client_msg_id), new seq and id.
			late := textMsg("alice", "bob", "c1", 7)
			late.ServerMsgID = "srv-late"
			// And a seq collision: another message on seq 2.
			clash := textMsg("alice", "bob", "c9", 2)
			fresh := textMsg("alice", "bob", "c4", 4)
			res, err = msgs.SaveBatch(ctx, []domain.Message{late, clash, fresh})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Outcome != store.Duplicate || res[0].Original.Seq != 1 || res[0].Original.ServerMsgID != batch[0].ServerMsgID {
				t.Errorf("late duplicate = %+v", res[0])
			}
			if res[1].Outcome != store.SeqTaken {
				t.Errorf("seq clash = %+v", res[1])
			}
			if res[2].Outcome != store.Saved {
				t.Errorf("fresh = %+v", res[2])
			}

			conv := domain.SingleConversationID("alice", "bob")
			if max, _ := seqs.MaxSeq(ctx, conv); max != 7 {
				t.Errorf("max_seq = %d, want 7 (the duplicate's gap is resolved too)", max)
			}
			if all, err := seqs.MaxSeqs(ctx, []string{conv, "si_nobody_none"}); err != nil || len(all) != 1 || all[conv] != 7 {
				t.Errorf("MaxSeqs = %v, %v; want only %s: 7", all, err, conv)
			}
			got, err := msgs.Range(ctx, conv, 1, 100, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 || got[0].Seq != 1 || got[3].Seq != 4 {
				t.Fatalf("range = %+v", got)
			}
			if got[0].Content.Text != "hi c1" || len(got[0].AtUserIDs) != 1 || got[0].AtUserIDs[0] != "bob" || got[0].Status != domain.StatusNormal {
				t.Errorf("round trip lost fields: %+v", got[0])
			}
			limited, _ := msgs.Range(ctx, conv, 2, 100, 2)
			if len(limited) != 2 || limited[0].Seq != 2 || limited[1].Seq != 3 {
				t.Errorf("limited range = %+v", limited)
			}
			picked, _ := msgs.BySeqs(ctx, conv, []int64{4, 1, 99})
			if len(picked) != 2 || picked[0].Seq != 1 || picked[1].Seq != 4 {
				t.Errorf("by seqs = %+v", picked)
			}

			c, err := cur.Get(ctx, "alice", conv)
			if err != nil || c.ReadSeq != 4 || c.DeliveredSeq != 4 {
				t.Errorf("sender cursor = %+v err %v", c, err)
			}
			c, err = cur.Get(ctx, "bob", conv)
			if err != nil || c.ReadSeq != 3 {
				t.Errorf("bob cursor = %+v err %v", c, err)
			}
			var n int64
			db.Gorm.Table("conversations").Where("conversation_id = ?", conv).Count(&n)
			if n != 2 {
				t.Errorf("%d conversation rows, want 2", n)
			}

			// Failed placeholder: readable as failed, and the original client id is free again.
			failed := textMsg("alice", "bob", "c5", 5)
			if err := msgs.SaveFailed(ctx, failed); err != nil {
				t.Fatal(err)
			}
			if err := msgs.SaveFailed(ctx, failed); err != nil {
				t.Fatal("second placeholder:", err)
			}
			ph, _ := msgs.BySeqs(ctx, conv, []int64{5})
			if len(ph) != 1 || ph[0].Status != domain.StatusFailed || ph[0].Content.Text != "" {
				t.Errorf("placeholder = %+v", ph)
			}
			c5 := domain.ClientMsgKey{SenderID: "alice", ClientMsgID: "c5"}
			if got, err := msgs.ByClientMsgIDs(ctx, []domain.ClientMsgKey{c5}); err != nil || len(got) != 0 {
				t.Errorf("placeholder took the original client_msg_id: %v %v", got, err)
			}

			// Batched lookup: saved keys are found, the others absent.
			keys := []domain.ClientMsgKey{{SenderID: "alice", ClientMsgID: "c1"}, {SenderID: "alice", ClientMsgID: "c5"},
				{SenderID: "bob", ClientMsgID: "nope"}, {SenderID: "alice", ClientMsgID: "c4"}}
			found, err := msgs.ByClientMsgIDs(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 2 || found[keys[0]].Seq != 1 || found[keys[3]].Seq != 4 || found[keys[3]].ServerMsgID != "srv-alice-c4-4" ||
				found[keys[3]].ConversationID != conv || found[keys[3]].SendAt == 0 {
				t.Errorf("by client_msg_ids = %+v", found)
			}
		})
	}
}

// A batch whose rows all went in reads nothing back (no duplicate lookup);
// a batch with a skipped row resolves it with one lookup.
func TestSaveBatchLooksUpOnlyWhenRowsWereSkipped(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			var mu sync.Mutex
			lookups := 0
			err := db.Gorm.Callback().Query().Before("gorm:query").Register("test:count_message_reads", func(tx *gorm.DB) {
				if tx.Statement.Table == "messages" {
					mu.Lock()
					lookups++
					mu.Unlock()
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			count := func() int { mu.Lock(); defer mu.Unlock(); n := lookups; lookups = 0; return n }
			msgs := store.NewMessageRepo(db)
			ctx := context.Background()
			fresh := []domain.Message{textMsg("alice", "bob", "c1", 1), textMsg("alice", "bob", "c2", 2)}
			res, err := msgs.SaveBatch(ctx, fresh)
			if err != nil || res[0].Outcome != store.Saved || res[1].Outcome != store.Saved ||
				res[1].Original.ServerMsgID != fresh[1].ServerMsgID || res[1].Original.Seq != 2 {
				t.Fatalf("fresh batch: %+v %v", res, err)
			}
			if n := count(); n != 0 {
				t.Fatalf("a batch with nothing skipped read messages %d times", n)
			}
			late := textMsg("alice", "bob", "c1", 3)
			late.ServerMsgID = "srv-late"
			res, err = msgs.SaveBatch(ctx, []domain.Message{late, textMsg("alice", "bob", "c3", 4)})
			if err != nil || res[0].Outcome != store.Duplicate || res[0].Original.Seq != 1 || res[1].Outcome != store.Saved {
				t.Fatalf("batch with a duplicate: %+v %v", res, err)
			}
			if n := count(); n != 1 {
				t.Fatalf("a batch with a skipped row read messages %d times, want 1", n)
			}
		})
	}
}

// TestSaveBatchRoundTrips: on MariaDB a batch whose rows are all new is one
// round trip between BEGIN and COMMIT, whatever its size; a batch with a
// skipped row is rolled back and saved statement by statement, with the
// same outcome. SQLite (embedded, no round trips) runs the statements one
// by one. A batch that fails (a data error) leaves nothing behind and the
// next batch saves normally: no connection goes back to the pool inside a
// transaction, and none of its rows is committed later.
func TestSaveBatchRoundTrips(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			msgs := store.NewMessageRepo(db)
			save := func(batch ...domain.Message) ([]store.SaveResult, *store.OpCounter) {
				t.Helper()
				c := &store.OpCounter{}
				res, err := msgs.SaveBatch(store.WithOpCounter(context.Background(), c), batch)
				if err != nil {
					t.Fatal(err)
				}
				return res, c
			}
			_, one := save(textMsg("alice", "bob", "r1", 1))
			var many []domain.Message
			for i := range 30 {
				many = append(many, textMsg("alice", "bob", fmt.Sprint("r", i+2), int64(i+2)))
			}
			_, thirty := save(many...)
			wantTrips := int64(1)
			if b.Name == "sqlite" {
				wantTrips = one.DB.Load()
			}
			if one.DBTrips.Load() != wantTrips || thirty.DBTrips.Load() != wantTrips || one.DB.Load() != thirty.DB.Load() {
				t.Fatalf("round trips %d and %d (statements %d and %d), want %d each",
					one.DBTrips.Load(), thirty.DBTrips.Load(), one.DB.Load(), thirty.DB.Load(), wantTrips)
			}
			// A redelivered row and a new one: the fast path rolls back.
			res, slow := save(textMsg("alice", "bob", "r1", 1), textMsg("alice", "bob", "r40", 40))
			if res[0].Outcome != store.Saved || res[0].Original.Seq != 1 || res[1].Outcome != store.Saved {
				t.Fatalf("redelivery with a new row: %+v", res)
			}
			if b.Name == "mariadb" && slow.DBTrips.Load() < 2 {
				t.Fatalf("a batch with a skipped row took %d round trips", slow.DBTrips.Load())
			}
			maxSeq, err := store.NewSeqRepo(db).MaxSeq(context.Background(), textMsg("alice", "bob", "x", 1).ConversationID)
			if err != nil || maxSeq != 40 {
				t.Fatalf("max_seq %d %v, want 40", maxSeq, err)
			}

			if b.Name == "sqlite" {
				return // SQLite does not enforce column lengths
			}
			// The INSERT goes in, then the mention row fails (a user ID
			// longer than its column): the whole batch must roll back.
			bad := textMsg("alice", "bob", "r50", 50)
			bad.AtUserIDs = []string{strings.Repeat("u", 100)}
			if _, err := msgs.SaveBatch(context.Background(), []domain.Message{textMsg("alice", "bob", "r49", 49), bad}); err == nil || store.IsRetryable(err) {
				t.Fatalf("a row longer than its column: err %v, want a permanent error", err)
			}
			for i := range 8 { // more batches than the pool keeps idle connections
				save(textMsg("alice", "bob", fmt.Sprint("r", 60+i), int64(60+i)))
			}
			got, err := msgs.Range(context.Background(), bad.ConversationID, 41, 100, 100)
			if err != nil || len(got) != 8 || got[0].Seq != 60 { // nothing of the failed batch (49, 50)
				t.Fatalf("after a failed batch: %d messages from seq %v, %v; want the 8 from 60", len(got), got, err)
			}
		})
	}
}

// TestSaveBatchLargerThanAPacketOnceEscaped: a batch whose text doubles
// when escaped (quotes) and so outgrows max_allowed_packet as one
// interpolated query is still saved, through prepared statements, instead
// of failing on a dropped connection.
func TestSaveBatchLargerThanAPacketOnceEscaped(t *testing.T) {
	dsn := storetest.MySQLDSN(t) + "&maxAllowedPacket=65536"
	db, err := store.OpenMySQL(context.Background(), configs.MySQL{DSN: dsn, MaxOpenConns: 4, MaxIdleConns: 2, ConnMaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	var batch []domain.Message
	for i := range 3 {
		m := textMsg("alice", "bob", fmt.Sprint("q", i), int64(i+1))
		m.Content.Text = strings.Repeat("'", 15000) // 45 KB raw, 90 KB escaped
		batch = append(batch, m)
	}
	res, err := store.NewMessageRepo(db).SaveBatch(context.Background(), batch)
	if err != nil || res[2].Outcome != store.Saved {
		t.Fatalf("saved %+v, %v", res, err)
	}
	got, err := store.NewMessageRepo(db).Range(context.Background(), batch[0].ConversationID, 1, 3, 10)
	if err != nil || len(got) != 3 || got[2].Content.Text != batch[2].Content.Text {
		t.Fatalf("read back %d messages, %v", len(got), err)
	}
	// One message, no mention: the save procedure's call is what outgrows
	// the packet.
	one := textMsg("alice", "bob", "q9", 4)
	one.AtUserIDs, one.Content.Text = nil, strings.Repeat("'", 40000)
	if res, err := store.NewMessageRepo(db).SaveBatch(context.Background(), []domain.Message{one}); err != nil || res[0].Outcome != store.Saved {
		t.Fatalf("one message larger than a packet once escaped: %+v, %v", res, err)
	}
	got, err = store.NewMessageRepo(db).Range(context.Background(), one.ConversationID, 4, 4, 10)
	if err != nil || len(got) != 1 || got[0].Content.Text != one.Content.Text {
		t.Fatalf("read back %d messages, %v", len(got), err)
	}
}
