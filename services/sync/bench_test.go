package sync_test

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/sync"
)

// countQueries counts every statement the database handle runs from now on.
func countQueries(db *gorm.DB) *atomic.Int64 {
	var n atomic.Int64
	inc := func(*gorm.DB) { n.Add(1) }
	cb := db.Callback()
	_ = cb.Query().After("gorm:query").Register("bench:count_query", inc)
	_ = cb.Row().After("gorm:row").Register("bench:count_row", inc)
	_ = cb.Raw().After("gorm:raw").Register("bench:count_raw", inc)
	_ = cb.Create().After("gorm:create").Register("bench:count_create", inc)
	_ = cb.Update().After("gorm:update").Register("bench:count_update", inc)
	_ = cb.Delete().After("gorm:delete").Register("bench:count_delete", inc)
	return &n
}

// BenchmarkCursorWritesPer1000Acks: 1,000 client ACKs (validated, as 1101
// takes them) arriving within one cursor_flush_interval, then the flush.
// Reported: upsert statements and rows written per 1,000 ACKs, for three
// shapes of burst.
func BenchmarkCursorWritesPer1000Acks(b *testing.B) {
	shapes := []struct {
		name    string
		members int // distinct (member, conversation) cursors
	}{
		{"1_member_1000_acks", 1},
		{"100_members_10_acks_each", 100},
		{"1000_members_1_ack_each", 1000},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			e := newEnv(b, envOpts{tweak: func(c *configs.Config) { c.Sync.CursorFlushInterval = time.Hour }})
			// One group conversation of sh.members members with 1,000 saved seqs.
			members := make([]string, sh.members)
			for i := range members {
				members[i] = fmt.Sprintf("m%04d", i)
			}
			if err := e.db.Gorm.Exec("INSERT INTO seq_conversations (conversation_id, max_seq, reserved_seq) VALUES ('sg_bench', 1000000, 1000000)").Error; err != nil {
				b.Fatal(err)
			}
			access := sync.NewAccess(benchBounds{}, e.seqs, nil, nil)
			cursors := sync.NewCursors(access, e.writer, e.convRepo)
			perMember := 1000 / sh.members
			st := e.writer.Stats()
			stmts0, rows0 := st.Statements.Load(), st.Rows.Load()
			seq := int64(0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := 0; k < perMember; k++ {
					seq++
					for _, m := range members {
						typ := "delivered"
						if k%2 == 1 {
							typ = "read"
						}
						if _, err := cursors.Ack(bg, m, sync.AckSource{}, sync.AckRequest{AckType: typ, ConversationID: "sg_bench", Seq: seq}); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := e.writer.Flush(bg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(st.Statements.Load()-stmts0)/float64(b.N), "statements/1000acks")
			b.ReportMetric(float64(st.Rows.Load()-rows0)/float64(b.N), "rows/1000acks")
		})
	}
}

// benchBounds: everyone is a member of every group from seq 1.
type benchBounds struct{}

func (benchBounds) Bounds(_ context.Context, _, _ string) (int64, int64, error) { return 1, 0, nil }

// countingTarget is a connection whose writer keeps up (Pending 0) and
// counts what it is sent.
type countingTarget struct {
	user     string
	platform int
	frames   atomic.Int64
}

func (c *countingTarget) UserID() string        { return c.user }
func (c *countingTarget) ConnID() string        { return "conn-" + c.user }
func (c *countingTarget) PlatformID() int       { return c.platform }
func (c *countingTarget) Pending() int          { return 0 }
func (c *countingTarget) Send(domain.Push) bool { c.frames.Add(1); return true }

// BenchmarkResendStorm: 1,000 users reconnect at once, each with 50
// missed messages (10 in each of 5 single chats). Reported: database
// queries per user, time to drain (every resend's frames queued), and the
// queries of a second storm inside resend_lock_ttl (suppressed).
func BenchmarkResendStorm(b *testing.B) {
	const users, peers, perPeer = 1000, 5, 10
	e := newEnv(b, envOpts{tweak: func(c *configs.Config) { c.Sync.ResendLockTTL = time.Minute }})
	ids := make([]string, users)
	for i := range ids {
		ids[i] = fmt.Sprintf("u%04d", i)
	}
	var batch []domain.Message
	flush := func() {
		if _, err := e.msgs.SaveBatch(bg, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	now := time.Now().UnixMilli()
	for i, u := range ids {
		for k := 1; k <= peers; k++ {
			peer := ids[(i+k)%users]
			conv := domain.SingleConversationID(u, peer)
			for s := 1; s <= perPeer; s++ {
				batch = append(batch, domain.Message{ServerMsgID: fmt.Sprintf("%s-%d", conv, s), ClientMsgID: fmt.Sprintf("%s-%d", conv, s),
					ConversationID: conv, Seq: int64(s), SenderID: peer, RecvID: u, SessionType: domain.SessionSingle,
					MsgType: domain.MsgText, Content: domain.Content{Text: "missed you"}, Status: domain.StatusNormal, SendAt: now + int64(s)})
			}
		}
		if len(batch) >= 1000 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	queries := countQueries(e.db.Gorm)
	storm := func(platform int) (time.Duration, int64, int64) {
		q0 := queries.Load()
		targets := make([]*countingTarget, users)
		var wg gosync.WaitGroup
		began := time.Now()
		for i, u := range ids {
			targets[i] = &countingTarget{user: u, platform: platform}
			wg.Add(1)
			go func(t *countingTarget) {
				defer wg.Done()
				if _, err := e.resender.Resend(bg, t); err != nil {
					b.Error(err)
				}
			}(targets[i])
		}
		wg.Wait()
		took := time.Since(began)
		var frames int64
		for _, t := range targets {
			frames += t.frames.Load()
		}
		return took, queries.Load() - q0, frames
	}
	b.ResetTimer()
	var took time.Duration
	var q, frames int64
	for i := 0; i < b.N; i++ {
		d, n, f := storm(100 + i) // a fresh platform: the lock of the last round does not apply
		took, q, frames = took+d, q+n, frames+f
	}
	b.StopTimer()
	if frames != int64(b.N*users*peers*perPeer) {
		b.Fatalf("resent %d frames, want %d", frames, b.N*users*peers*perPeer)
	}
	_, lockedQ, lockedFrames := storm(100) // inside the lock TTL of the first round
	b.ReportMetric(float64(q)/float64(b.N*users), "queries/user")
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms_to_drain")
	b.ReportMetric(float64(frames)/took.Seconds(), "msgs/s")
	b.ReportMetric(float64(lockedQ)/float64(users), "locked_queries/user")
	if lockedFrames != 0 {
		b.Fatalf("a storm inside the lock resent %d frames", lockedFrames)
	}
}
