package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store"
)

// TestCursorsAreMonotonic: repeated and reordered ACKs never move a cursor
// back; read also advances delivered; the stored cursor is the maximum of
// everything acknowledged, whether the ACKs fall into one flush or many.
func TestCursorsAreMonotonic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	for i := 0; i < 12; i++ {
		e.send("alice", "bob")
	}
	type ack struct {
		typ string
		seq int64
	}
	steps := []struct {
		name            string
		acks            []ack
		flushEach       bool
		delivered, read int64
	}{
		{"in order", []ack{{"delivered", 1}, {"delivered", 2}, {"delivered", 3}}, false, 3, 0},
		{"reordered in one window", []ack{{"delivered", 7}, {"delivered", 5}, {"delivered", 6}}, false, 7, 0},
		{"reordered across flushes", []ack{{"delivered", 4}, {"delivered", 2}}, true, 7, 0},
		{"repeats", []ack{{"delivered", 7}, {"delivered", 7}, {"read", 3}, {"read", 3}}, true, 7, 3},
		{"read advances delivered", []ack{{"read", 9}}, true, 9, 9},
		{"ack_read is read", []ack{{"ack_read", 10}, {"read", 8}}, false, 10, 10},
		{"delivered never lowers read", []ack{{"delivered", 11}, {"delivered", 1}}, true, 11, 10},
	}
	for _, st := range steps {
		for _, a := range st.acks {
			if err := e.ack("bob", conv, a.typ, a.seq); err != nil {
				t.Fatalf("%s: ack %v: %v", st.name, a, err)
			}
			if st.flushEach {
				e.flush()
			}
		}
		e.flush()
		if c := e.cursor("bob", conv); c.DeliveredSeq != st.delivered || c.ReadSeq != st.read {
			t.Fatalf("%s: delivered %d read %d, want %d %d", st.name, c.DeliveredSeq, c.ReadSeq, st.delivered, st.read)
		}
	}
	// The sender's cursor is untouched by the receiver's ACKs.
	if c := e.cursor("alice", conv); c.ReadSeq != 12 || c.DeliveredSeq != 12 {
		t.Fatalf("alice's cursor %+v", c)
	}
}

// TestAckRefusals: what an ACK may not do, and the reason it gets.
func TestAckRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol", "dave")
	conv := domain.SingleConversationID("alice", "bob")
	for i := 0; i < 3; i++ {
		e.send("alice", "bob")
	}
	gid := e.createGroup("alice", "bob", "carol")
	gconv := domain.GroupConversationID(gid)
	seq, err := e.sendGroup("bob", gid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.groups.Kick(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"carol"}}); err != nil {
		t.Fatal(err)
	}
	after, _ := e.sendGroup("bob", gid)
	cases := []struct {
		name   string
		user   string
		req    sync.AckRequest
		reason wire.Reason
	}{
		{"unknown ack_type", "bob", sync.AckRequest{AckType: "seen", ConversationID: conv, Seq: 1}, wire.ReasonBadRequest},
		{"saved is not a client ACK", "bob", sync.AckRequest{AckType: "saved", ConversationID: conv, Seq: 1}, wire.ReasonBadRequest},
		{"seq 0", "bob", sync.AckRequest{AckType: "read", ConversationID: conv, Seq: 0}, wire.ReasonBadRequest},
		{"no conversation", "bob", sync.AckRequest{AckType: "read", Seq: 1}, wire.ReasonBadRequest},
		{"malformed conversation", "bob", sync.AckRequest{AckType: "read", ConversationID: "xx_1", Seq: 1}, wire.ReasonBadRequest},
		{"above the max", "bob", sync.AckRequest{AckType: "delivered", ConversationID: conv, Seq: 4}, wire.ReasonBadSeq},
		{"not a party", "carol", sync.AckRequest{AckType: "read", ConversationID: conv, Seq: 1}, wire.ReasonNotConversationMember},
		{"never a member", "dave", sync.AckRequest{AckType: "read", ConversationID: gconv, Seq: 1}, wire.ReasonNotConversationMember},
		{"kicked: above the cap", "carol", sync.AckRequest{AckType: "read", ConversationID: gconv, Seq: after}, wire.ReasonBadSeq},
		{"no such group", "bob", sync.AckRequest{AckType: "read", ConversationID: "sg_nope", Seq: 1}, wire.ReasonNotConversationMember},
	}
	for _, tc := range cases {
		_, err := e.cursors.Ack(bg, tc.user, sync.AckSource{}, tc.req)
		wantReason(t, err, tc.reason)
	}
	// Allowed: up to the max, and a kicked member up to its cap.
	if err := e.ack("bob", conv, "read", 3); err != nil {
		t.Fatal(err)
	}
	if err := e.ack("carol", gconv, "read", seq); err != nil {
		t.Fatalf("kicked carol acks below her cap: %v", err)
	}
	e.flush()
	if c := e.cursor("carol", gconv); c.ReadSeq != seq {
		t.Fatalf("carol's read %d, want %d", c.ReadSeq, seq)
	}
	if _, err := e.cursors.MarkRead(bg, "dave", sync.AckSource{}, sync.MarkReadRequest{ConversationID: conv, Seq: 1}); err == nil {
		t.Fatal("an outsider marked a conversation read")
	}
}

// TestAckOfAcceptedButUnsavedSeq: the bound of an ACK is the highest seq
// issued (a deliver-first push can arrive before the save), not the saved
// max; one above it is bad_seq.
func TestAckOfAcceptedButUnsavedSeq(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{mode: saveFirst, noStages: true})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	var last int64
	for i := 0; i < 3; i++ {
		last = e.send("alice", "bob")
	}
	if saved, _ := e.seqs.MaxSeq(bg, conv); saved != 0 {
		t.Fatalf("saved %d with the save stage stopped", saved)
	}
	if err := e.ack("bob", conv, "delivered", last); err != nil {
		t.Fatalf("ACK of an accepted seq: %v", err)
	}
	wantReason(t, e.ack("bob", conv, "delivered", last+1), wire.ReasonBadSeq)
	e.flush()
	if c := e.cursor("bob", conv); c.DeliveredSeq != last {
		t.Fatalf("delivered %d, want %d", c.DeliveredSeq, last)
	}
}

// TestCursorWritesCoalesce: a burst of ACKs within one window costs one
// statement with one row per member and conversation; ACKs the database
// already holds cost no write at all.
func TestCursorWritesCoalesce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.Sync.CursorFlushInterval = 10e9 }})
	e.addUsers("alice", "r0", "r1", "r2", "r3")
	for i := 0; i < 4; i++ {
		for j := 0; j < 25; j++ {
			e.send("alice", fmt.Sprint("r", i))
		}
	}
	st := e.writer.Stats()
	before := st.Statements.Load()
	for seq := int64(1); seq <= 25; seq++ {
		for i := 0; i < 4; i++ {
			conv := domain.SingleConversationID("alice", fmt.Sprint("r", i))
			for _, typ := range []string{"delivered", "read"} {
				if err := e.ack(fmt.Sprint("r", i), conv, typ, seq); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	e.flush()
	if n := st.Statements.Load() - before; n != 1 {
		t.Fatalf("200 ACKs cost %d statements, want 1", n)
	}
	for i := 0; i < 4; i++ {
		if c := e.cursor(fmt.Sprint("r", i), domain.SingleConversationID("alice", fmt.Sprint("r", i))); c.ReadSeq != 25 {
			t.Fatalf("r%d read %d", i, c.ReadSeq)
		}
	}
	before = st.Statements.Load()
	if err := e.ack("r0", domain.SingleConversationID("alice", "r0"), "read", 20); err != nil {
		t.Fatal(err)
	}
	e.flush()
	if n := st.Statements.Load() - before; n != 0 {
		t.Fatalf("an ACK below the stored cursor cost %d statements", n)
	}
}

// TestReadsSeeUnflushedAcks: newest seq and the list overlay the advances
// the writer has not written yet.
func TestReadsSeeUnflushedAcks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.Sync.CursorFlushInterval = 10e9 }})
	e.addUsers("alice", "bob")
	conv := domain.SingleConversationID("alice", "bob")
	for i := 0; i < 5; i++ {
		e.send("alice", "bob")
	}
	if err := e.ack("bob", conv, "read", 4); err != nil {
		t.Fatal(err)
	}
	if c := e.cursor("bob", conv); c.ReadSeq != 0 {
		t.Fatalf("written before the window: %+v", c)
	}
	res, err := e.cursors.NewestSeq(bg, "bob", nil)
	if err != nil || res.Conversations[conv].ReadSeq != 4 || res.Conversations[conv].DeliveredSeq != 4 {
		t.Fatalf("newest seq = %+v, %v", res, err)
	}
	list, err := e.convs.List(bg, "bob", 0, 0)
	if err != nil || len(list.Conversations) != 1 || list.Conversations[0].UnreadCount != 1 || list.Conversations[0].ReadSeq != 4 {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

// TestReceipts: a moved cursor pushes a 2101 to the other party in single
// chat; in a group, read receipts go to the senders of the newly read
// messages (not to the reader, not for notifications), and not at all in
// a group above group_receipt_max_members.
func TestReceipts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{tweak: func(c *configs.Config) { c.Sync.GroupReceiptMaxMembers = 3 }})
	e.addUsers("alice", "bob", "carol", "dave")
	conv := domain.SingleConversationID("alice", "bob")
	for i := 0; i < 3; i++ {
		e.send("alice", "bob")
	}
	e.reg.Reset()
	if err := e.ack("bob", conv, "delivered", 3); err != nil {
		t.Fatal(err)
	}
	e.flush()
	if err := e.ack("bob", conv, "read", 2); err != nil {
		t.Fatal(err)
	}
	e.flush()
	if err := e.ack("bob", conv, "read", 1); err != nil { // below the cursor: the cursor as it stands
		t.Fatal(err)
	}
	e.flush()
	got := e.reg.PushesOf("alice", wire.PushAck)
	if len(got) != 3 || got[0].Str("ack_type") != "delivered" || got[0].Int("seq") != 3 || got[0].Str("user_id") != "bob" ||
		got[1].Str("ack_type") != "read" || got[1].Int("seq") != 2 || got[0].Str("conversation_id") != conv ||
		got[2].Str("ack_type") != "read" || got[2].Int("seq") != 2 {
		t.Fatalf("alice's receipts = %+v", got)
	}
	if mine := e.reg.PushesOf("bob", wire.PushAck); len(mine) != 0 {
		t.Fatalf("the reader got its own receipts: %+v", mine)
	}
	// Bob replies: his read cursor moves with his message in the save, and
	// his next ACK — even a late one below it — tells alice (one read
	// receipt, no separate delivered one).
	reply := e.send("bob", "alice")
	e.reg.Reset()
	if err := e.ack("bob", conv, "read", reply-1); err != nil {
		t.Fatal(err)
	}
	e.flush()
	got = e.reg.PushesOf("alice", wire.PushAck)
	if len(got) != 1 || got[0].Str("ack_type") != "read" || got[0].Int("seq") != reply {
		t.Fatalf("alice's receipts after bob's reply = %+v", got)
	}

	gid := e.createGroup("alice", "bob", "carol")
	gconv := domain.GroupConversationID(gid)
	_, _ = e.sendGroup("alice", gid)
	s2, _ := e.sendGroup("bob", gid)
	e.reg.Reset()
	if err := e.ack("carol", gconv, "read", s2); err != nil {
		t.Fatal(err)
	}
	e.flush()
	for _, u := range []string{"alice", "bob"} {
		r := e.reg.PushesOf(u, wire.PushAck)
		if len(r) != 1 || r[0].Str("ack_type") != "read" || r[0].Int("seq") != s2 || r[0].Str("user_id") != "carol" {
			t.Fatalf("%s's group receipts = %+v", u, r)
		}
	}
	if r := e.reg.PushesOf("carol", wire.PushAck); len(r) != 0 {
		t.Fatalf("carol got receipts of her own read: %+v", r)
	}
	// bob (already at s2: he sent it) reads alice's next message: only
	// alice hears of it.
	s3, _ := e.sendGroup("alice", gid)
	e.reg.Reset()
	if err := e.ack("bob", gconv, "read", s3); err != nil {
		t.Fatal(err)
	}
	e.flush()
	if r := e.reg.PushesOf("alice", wire.PushAck); len(r) != 1 || r[0].Int("seq") != s3 || r[0].Str("user_id") != "bob" {
		t.Fatalf("alice: %+v", r)
	}
	if r := e.reg.PushesOf("carol", wire.PushAck); len(r) != 0 {
		t.Fatalf("carol got a receipt though she sent nothing bob newly read: %+v", r)
	}
	// A fourth member makes the group too large for receipts.
	if _, err := e.groups.Invite(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"dave"}}); err != nil {
		t.Fatal(err)
	}
	s4, _ := e.sendGroup("alice", gid)
	e.reg.Reset()
	if err := e.ack("carol", gconv, "read", s4); err != nil {
		t.Fatal(err)
	}
	e.flush()
	if r := e.reg.PushesOf("alice", wire.PushAck); len(r) != 0 {
		t.Fatalf("receipts in a group above the limit: %+v", r)
	}
}

// TestNewestSeq: 1001 over all conversations or given ones, within the
// caller's bounds; 1006.
func TestNewestSeq(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol", "dave")
	ab := domain.SingleConversationID("alice", "bob")
	for i := 0; i < 4; i++ {
		e.send("alice", "bob")
	}
	gid := e.createGroup("alice", "bob", "carol")
	gconv := domain.GroupConversationID(gid)
	s1, _ := e.sendGroup("alice", gid)
	if _, err := e.groups.Kick(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"carol"}}); err != nil {
		t.Fatal(err)
	}
	kickSeq := e.cursor("carol", gconv).MaxSeq
	s2, _ := e.sendGroup("alice", gid)
	if err := e.ack("bob", ab, "delivered", 3); err != nil {
		t.Fatal(err)
	}
	all, err := e.cursors.NewestSeq(bg, "bob", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := all.Conversations[ab]; len(all.Conversations) != 2 || got.MaxSeq != 4 || got.MinSeq != 1 || got.DeliveredSeq != 3 || got.ReadSeq != 0 {
		t.Fatalf("bob's newest seqs = %+v", all)
	}
	if got := all.Conversations[gconv]; got.MaxSeq != s2 || got.MinSeq != 1 {
		t.Fatalf("bob's group seqs = %+v", got)
	}
	carol, err := e.cursors.NewestSeq(bg, "carol", []string{gconv, gconv})
	if err != nil || carol.Conversations[gconv].MaxSeq != kickSeq || kickSeq < s1 || kickSeq >= s2 {
		t.Fatalf("kicked carol sees %+v (kick at %d), %v", carol, kickSeq, err)
	}
	if _, err := e.cursors.NewestSeq(bg, "carol", []string{ab}); err == nil {
		t.Fatal("carol read the newest seq of a conversation she is not in")
	} else {
		wantReason(t, err, wire.ReasonNotConversationMember)
	}
	// A conversation with nothing saved yet: zeros.
	ad := domain.SingleConversationID("alice", "dave")
	res, err := e.cursors.NewestSeq(bg, "alice", []string{ad})
	if err != nil || res.Conversations[ad] != (sync.SeqInfo{MinSeq: 1}) {
		t.Fatalf("empty conversation = %+v, %v", res, err)
	}
	mr, err := e.cursors.MaxRead(bg, "alice", sync.MaxReadRequest{ConversationID: ab})
	if err != nil || mr.MaxSeq != 4 || mr.ReadSeq != 4 {
		t.Fatalf("1006 = %+v, %v", mr, err)
	}
	many := make([]string, 1001)
	for i := range many {
		many[i] = ab
	}
	_, err = e.cursors.NewestSeq(bg, "alice", many)
	wantReason(t, err, wire.ReasonBadRequest)
}

// TestNewestSeqPages: without conversation IDs the
// newest seqs come a page at a time (cursor/limit, next_cursor "" after
// the last page), every conversation exactly once; bad limits, foreign
// cursors and cursor with IDs are refused.
func TestNewestSeqPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	peers := []string{"bob", "carol", "dave", "erin", "fred"}
	e.addUsers(append([]string{"alice"}, peers...)...)
	want := map[string]bool{}
	for _, p := range peers {
		e.send("alice", p)
		want[domain.SingleConversationID("alice", p)] = true
	}
	got := map[string]bool{}
	cursor := ""
	for pages := 1; ; pages++ {
		if pages > 3 {
			t.Fatalf("more than 3 pages of 2 for 5 conversations: %v", got)
		}
		res, err := e.cursors.Newest(bg, "alice", sync.NewestSeqRequest{Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for id, info := range res.Conversations {
			if got[id] || info.MaxSeq != 1 {
				t.Fatalf("page %d: %s again or wrong seqs %+v", pages, id, info)
			}
			got[id] = true
		}
		if res.NextCursor == "" {
			break
		}
		if len(res.Conversations) != 2 {
			t.Fatalf("a page of %d with a next cursor", len(res.Conversations))
		}
		cursor = res.NextCursor
	}
	if len(got) != len(want) {
		t.Fatalf("paged %v, want %v", got, want)
	}
	if all, err := e.cursors.Newest(bg, "alice", sync.NewestSeqRequest{}); err != nil || len(all.Conversations) != 5 || all.NextCursor != "" {
		t.Fatalf("default page %+v %v", all, err)
	}
	ab := domain.SingleConversationID("alice", "bob")
	for name, req := range map[string]sync.NewestSeqRequest{
		"limit above the max": {Limit: sync.MaxNewestPage + 1},
		"negative limit":      {Limit: -1},
		"cursor with IDs":     {ConversationIDs: []string{ab}, Cursor: ab},
		"limit with IDs":      {ConversationIDs: []string{ab}, Limit: 1},
		"over-long cursor":    {Cursor: strings.Repeat("x", 300)},
	} {
		_, err := e.cursors.Newest(bg, "alice", req)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		wantReason(t, err, wire.ReasonBadRequest)
	}
}

// TestCursorWriterKeepsAdvancesOnFailure: a flush that fails keeps its
// advances and a later one writes them; Close writes what is left.
func TestCursorWriterKeepsAdvancesOnFailure(t *testing.T) {
	t.Parallel()
	st := &flakyStore{fail: true}
	w := sync.NewCursorWriter(sync.CursorWriterDeps{Store: st, Window: 1e9, Log: quiet})
	w.Advance("u", "c", 3, 0, sync.AckSource{})
	if err := w.Flush(bg); err == nil {
		t.Fatal("flush did not fail")
	}
	w.Advance("u", "c", 0, 2, sync.AckSource{})
	c := domain.Cursor{UserID: "u", ConversationID: "c"}
	w.Overlay(&c)
	if c.DeliveredSeq != 3 || c.ReadSeq != 2 {
		t.Fatalf("overlay after a failed flush = %+v", c)
	}
	st.fail = false
	if err := w.Close(bg); err != nil {
		t.Fatal(err)
	}
	if len(st.written) != 1 || st.written[0].DeliveredSeq != 3 || st.written[0].ReadSeq != 2 {
		t.Fatalf("written %+v", st.written)
	}
}

// TestOverlayCoversAJustWrittenAdvance: a read whose database query ran
// just before a flush committed, and whose Overlay runs just after, still
// sees the advance (a client reads its own mark_read at once; the race
// failed cmd/app TestSyncCursorsAndReceiptsEndToEnd once under load).
func TestOverlayCoversAJustWrittenAdvance(t *testing.T) {
	t.Parallel()
	st := &flakyStore{}
	w := sync.NewCursorWriter(sync.CursorWriterDeps{Store: st, Window: 1e9, Log: quiet})
	w.Advance("u", "c", 0, 3, sync.AckSource{})
	stale := domain.Cursor{UserID: "u", ConversationID: "c", DeliveredSeq: 2, ReadSeq: 2} // read before the flush
	if err := w.Flush(bg); err != nil {
		t.Fatal(err)
	}
	w.Overlay(&stale)
	if stale.ReadSeq != 3 || stale.DeliveredSeq != 3 {
		t.Fatalf("overlay right after the flush = %+v, want read and delivered 3", stale)
	}
}

type flakyStore struct {
	fail    bool
	written []domain.Cursor
}

func (s *flakyStore) Load(context.Context, []store.CursorKey) (map[store.CursorKey]domain.Cursor, error) {
	if s.fail {
		return nil, errStop
	}
	return nil, nil
}

func (s *flakyStore) Advance(_ context.Context, cs []domain.Cursor) (int, error) {
	s.written = append(s.written, cs...)
	return 1, nil
}
