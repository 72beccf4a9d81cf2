package actions_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/actions"
	"github.com/nexo-im/nexo/services/sync"
)

func TestReadByMatchesCursors(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol", "dave", "erin")
	g := e.createGroup("alice", "bob", "carol", "dave")
	conv := domain.GroupConversationID(g)
	s1 := e.sendGroup("alice", g, "one")
	s2 := e.sendGroup("bob", g, "two")
	if _, err := e.groups.Join(bg, "erin", g); err != nil { // joined after both: never counted for them
		t.Fatal(err)
	}
	// bob read up to s2, carol up to s1, dave nothing; erin read everything.
	for _, r := range []struct {
		user string
		seq  int64
	}{{"bob", s2}, {"carol", s1}} {
		if _, err := e.cursors.Ack(bg, r.user, sync.AckSource{}, sync.AckRequest{AckType: "read", ConversationID: conv, Seq: r.seq}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.writer.Flush(bg); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.ReadBy(bg, "alice", actions.ReadByRequest{ConversationID: conv, Seq: s1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.ReadUserIDs, []string{"bob", "carol"}) || !slices.Equal(res.UnreadUserIDs, []string{"dave"}) ||
		res.ReadCount != 2 || res.MemberCount != 3 || res.NextCursor != "" {
		t.Fatalf("read by of s1: %+v", res)
	}
	res, err = e.svc.ReadBy(bg, "carol", actions.ReadByRequest{ConversationID: conv, Seq: s2})
	if err != nil {
		t.Fatal(err)
	}
	// bob sent s2 (left out); alice's own send moved her cursor to s1 only.
	if !slices.Equal(res.ReadUserIDs, []string{}) || !slices.Equal(res.UnreadUserIDs, []string{"alice", "carol", "dave"}) || res.MemberCount != 3 {
		t.Fatalf("read by of s2: %+v", res)
	}
	// Paging: one member a page, cursors chained.
	var listed []string
	cursor := ""
	for range 5 {
		page, err := e.svc.ReadBy(bg, "alice", actions.ReadByRequest{ConversationID: conv, Seq: s1, Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		listed = append(append(listed, page.ReadUserIDs...), page.UnreadUserIDs...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(listed, []string{"bob", "carol", "dave"}) {
		t.Fatalf("paged %v", listed)
	}
	// Hostile: a stranger, a seq beyond max_seq, a bad limit.
	_, err = e.svc.ReadBy(bg, "mallory", actions.ReadByRequest{ConversationID: conv, Seq: s1})
	wantReason(t, err, wire.ReasonNotConversationMember)
	_, err = e.svc.ReadBy(bg, "alice", actions.ReadByRequest{ConversationID: conv, Seq: s2 + 100})
	wantReason(t, err, wire.ReasonBadSeq)
	_, err = e.svc.ReadBy(bg, "alice", actions.ReadByRequest{ConversationID: conv, Seq: s1, Limit: 501})
	wantReason(t, err, wire.ReasonBadRequest)
}

// TestReadCountsCoalesced: a burst of reads by many members gives the
// sender updates far fewer than the reads, the last of which matches the
// cursors exactly.
func TestReadCountsCoalesced(t *testing.T) {
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) {
		c.Group.MaxIDsPerRequest = 100
		c.Sync.GroupReceiptMaxMembers = 0 // read counts only
	}})
	users := make([]string, 30)
	for i := range users {
		users[i] = fmt.Sprintf("r%02d", i)
	}
	e.addUsers(users...)
	g := e.createGroup(users[0], users[1:]...)
	conv := domain.GroupConversationID(g)
	seq := e.sendGroup(users[0], g, "read me")
	e.run(func(ctx context.Context) { _ = e.counts.Run(ctx) })
	for _, u := range users[1:21] {
		if _, err := e.cursors.Ack(bg, u, sync.AckSource{}, sync.AckRequest{AckType: "read", ConversationID: conv, Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	p := e.reg.WaitPush(t, users[0], wire.PushReadCount, func(p wstest.Push) bool {
		counts, _ := p.Data["counts"].([]any)
		if len(counts) == 0 {
			return false
		}
		c := counts[len(counts)-1].(map[string]any)
		return int64(c["seq"].(float64)) == seq && c["read_count"].(float64) == 20
	})
	c := p.Data["counts"].([]any)[0].(map[string]any)
	if c["member_count"].(float64) != 29 {
		t.Fatalf("read count push %v", p.Data)
	}
	if n := len(e.reg.PushesOf(users[0], wire.PushReadCount)); n >= 20 {
		t.Fatalf("%d read-count pushes for 20 reads: not coalesced", n)
	}
	res, err := e.svc.ReadBy(bg, users[0], actions.ReadByRequest{ConversationID: conv, Seq: seq})
	if err != nil || res.ReadCount != 20 || res.MemberCount != 29 {
		t.Fatalf("read by %+v %v", res, err)
	}
	// Nobody else gets read counts, and no per-reader group receipts.
	if got := e.reg.PushesOf(users[5], wire.PushReadCount); len(got) != 0 {
		t.Fatalf("a reader got read counts: %v", got)
	}
	if got := e.reg.PushesOf(users[0], wire.PushAck); len(got) > 1 {
		t.Fatalf("the sender still gets per-reader receipts: %d", len(got))
	}
}
