package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
)

func openMigratedSQLite(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "nexo.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// batchOf returns n single-chat messages from sender, seqs from seq.
func batchOf(sender string, n int, seq int64) []domain.Message {
	msgs := make([]domain.Message, n)
	for i := range msgs {
		s := seq + int64(i)
		msgs[i] = domain.Message{
			ServerMsgID: fmt.Sprintf("srv-%s-%d", sender, s), ClientMsgID: fmt.Sprintf("c-%d", s),
			ConversationID: domain.SingleConversationID(sender, "bob"), Seq: s, SenderID: sender, RecvID: "bob",
			SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: "hi"},
			Status: domain.StatusNormal, SendAt: 1700000000000 + s,
		}
	}
	return msgs
}

// TestStmtCacheKeepsTheSaveAndLookupStatements: on SQLite a save batch's
// statements are prepared once its transaction is over and run prepared
// from then on, as is the duplicate lookup; a batch too large to keep is
// not cached.
func TestStmtCacheKeepsTheSaveAndLookupStatements(t *testing.T) {
	db := openMigratedSQLite(t)
	repo := NewMessageRepo(db)
	ctx := context.Background()
	first := batchOf("alice", 1, 1)
	if _, err := repo.SaveBatch(ctx, first); err != nil {
		t.Fatal(err)
	}
	rows := []messageRow{toMessageRow(&first[0], 0)}
	insert := db.insertMessagesSQL(rows).query
	if !db.stmts.stmts.Contains(insert) {
		t.Fatalf("the insert of one message is not cached; cached: %v", db.stmts.stmts.Keys())
	}
	kept := db.stmts.stmts.Len()
	res, err := repo.SaveBatch(ctx, batchOf("alice", 1, 2))
	if err != nil || res[0].Outcome != Saved {
		t.Fatalf("second batch: %+v, %v", res, err)
	}
	if db.stmts.stmts.Len() != kept || len(db.stmts.missed) != 0 {
		t.Fatalf("the same shape again: %d cached (was %d), %d missed", db.stmts.stmts.Len(), kept, len(db.stmts.missed))
	}
	// A resend runs the prepared insert, which now skips the row: the
	// affected rows must say so for SaveBatch to resolve it.
	res, err = repo.SaveBatch(ctx, first)
	if err != nil || res[0].Outcome != Saved || res[0].Original.ServerMsgID != first[0].ServerMsgID {
		t.Fatalf("resend: %+v, %v", res, err)
	}

	key := domain.ClientMsgKey{SenderID: "alice", ClientMsgID: first[0].ClientMsgID}
	for i := 0; i < 2; i++ { // the miss prepares, the hit reuses
		found, err := repo.ByClientMsgIDs(ctx, []domain.ClientMsgKey{key})
		if err != nil || found[key].Seq != 1 {
			t.Fatalf("lookup %d: %+v, %v", i, found, err)
		}
	}
	if !db.stmts.stmts.Contains(identitySQL([]domain.ClientMsgKey{key}).query) {
		t.Fatal("the lookup of one key is not cached")
	}

	big := batchOf("carol", 10, 1) // 10 × 21 arguments > maxCachedArgs
	if _, err := repo.SaveBatch(ctx, big); err != nil {
		t.Fatal(err)
	}
	bigRows := make([]messageRow, len(big))
	for i := range big {
		bigRows[i] = toMessageRow(&big[i], 0)
	}
	if db.stmts.stmts.Contains(db.insertMessagesSQL(bigRows).query) {
		t.Fatal("a 10-message insert was cached")
	}
}

// TestStmtCacheNeverWaitsForAConnectionInATransaction: more concurrent save
// batches than the pool has connections, each of a shape not prepared yet,
// all complete. Preparing a miss on the pool from inside a transaction
// deadlocked here: every connection held by a transaction waiting for
// another (until the 10 s busy timeout failed them).
func TestStmtCacheNeverWaitsForAConnectionInATransaction(t *testing.T) {
	db := openMigratedSQLite(t)
	repo := NewMessageRepo(db)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	const senders, rounds = 12, 9
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			seq := int64(1)
			for n := 1; n <= rounds; n++ { // batch sizes 1..9: a new insert text each round
				if _, err := repo.SaveBatch(ctx, batchOf(fmt.Sprint("u", s), n, seq)); err != nil {
					errs <- fmt.Errorf("sender %d, batch of %d: %w", s, n, err)
					return
				}
				seq += int64(n)
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var saved int64
	if err := db.Gorm.Table("messages").Count(&saved).Error; err != nil {
		t.Fatal(err)
	}
	if want := int64(senders * rounds * (rounds + 1) / 2); saved != want {
		t.Fatalf("%d messages saved, want %d", saved, want)
	}
}

// TestStmtCacheSurvivesAStatementClosedByEviction: a statement the LRU
// evicts is closed, possibly between a caller's lookup and its use; the
// lookup then runs as text, and a transaction re-prepares it.
func TestStmtCacheSurvivesAStatementClosedByEviction(t *testing.T) {
	db := openMigratedSQLite(t)
	repo := NewMessageRepo(db)
	ctx := context.Background()
	first := batchOf("alice", 1, 1)
	key := domain.ClientMsgKey{SenderID: "alice", ClientMsgID: first[0].ClientMsgID}
	if _, err := repo.SaveBatch(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.ByClientMsgIDs(ctx, []domain.ClientMsgKey{key}); err != nil {
		t.Fatal(err)
	}
	// Close every cached statement but leave it cached, as an eviction
	// racing a caller would.
	for _, q := range db.stmts.stmts.Keys() {
		s, _ := db.stmts.stmts.Peek(q)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	found, err := repo.ByClientMsgIDs(ctx, []domain.ClientMsgKey{key})
	if err != nil || found[key].Seq != 1 {
		t.Fatalf("lookup through a closed statement: %+v, %v", found, err)
	}
	res, err := repo.SaveBatch(ctx, batchOf("alice", 1, 2))
	if err != nil || res[0].Outcome != Saved {
		t.Fatalf("save through a closed statement: %+v, %v", res, err)
	}
}
