package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// msgAt is a message of conversation conv at seq, sent at sendAt.
func msgAt(conv string, seq int64, sender string, sendAt int64, mt domain.MsgType, at ...string) domain.Message {
	m := domain.Message{
		ServerMsgID: conv + "/" + string(rune('0'+seq/10)) + string(rune('0'+seq%10)), ClientMsgID: "c" + conv + string(rune('A'+seq)),
		ConversationID: conv, Seq: seq, SenderID: sender, MsgType: mt, Content: domain.Content{Text: "x"},
		AtUserIDs: at, Status: domain.StatusNormal, SendAt: sendAt,
	}
	if mt >= domain.MsgNotificationMin {
		m.Content = domain.Content{Custom: `{}`}
	}
	if gid := domain.GroupIDOf(conv); gid != "" {
		m.SessionType, m.GroupID = domain.SessionGroup, gid
	} else {
		m.SessionType = domain.SessionSingle
		m.RecvID, _ = domain.SinglePeer(conv, sender)
	}
	return m
}

// syncFixture: alice and bob talk (si_alice_bob, seqs 1–4, newest at
// t+40), alice wrote to carol once (si_alice_carol, seq 1 at t+50), and
// alice, bob and carol are in group g (sg_g: 1 a notification, 2 bob's
// @all, 3 bob's @alice, 4 a failed save, 5 alice's own @all, at t+10…t+14).
type syncFixture struct {
	db    *store.DB
	convs *store.ConversationRepo
	msgs  *store.MessageRepo
	ab    string
	ac    string
	g     string
}

const t0 = int64(1_700_000_000_000)

func newSyncFixture(t *testing.T, b storetest.Backend) *syncFixture {
	t.Helper()
	ctx := context.Background()
	db := b.Open(t)
	f := &syncFixture{db: db, convs: store.NewConversationRepo(db), msgs: store.NewMessageRepo(db),
		ab: domain.SingleConversationID("alice", "bob"), ac: domain.SingleConversationID("alice", "carol"), g: domain.GroupConversationID("g")}
	groups := store.NewGroupRepo(db)
	var members []domain.GroupMember
	for _, u := range []string{"alice", "bob", "carol"} {
		members = append(members, domain.GroupMember{UserID: u, RoleLevel: domain.RoleMember, JoinSeq: 1})
	}
	if _, err := groups.Create(ctx, domain.Group{ID: "g", Name: "g", OwnerUserID: "alice", CreatorUserID: "alice"}, members); err != nil {
		t.Fatal(err)
	}
	batch := []domain.Message{
		msgAt(f.ab, 1, "alice", t0+1, domain.MsgText), msgAt(f.ab, 2, "bob", t0+2, domain.MsgText, "alice"),
		msgAt(f.ab, 3, "bob", t0+3, domain.MsgText), msgAt(f.ab, 4, "alice", t0+40, domain.MsgText),
		msgAt(f.ac, 1, "alice", t0+50, domain.MsgText),
		msgAt(f.g, 1, "alice", t0+10, domain.MsgNotificationMin+1), msgAt(f.g, 2, "bob", t0+11, domain.MsgText, "all"),
		msgAt(f.g, 3, "bob", t0+12, domain.MsgText, "alice", "alice"), msgAt(f.g, 5, "alice", t0+14, domain.MsgText, "all"),
	}
	if _, err := f.msgs.SaveBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := f.msgs.SaveFailed(ctx, msgAt(f.g, 4, "bob", t0+13, domain.MsgText)); err != nil {
		t.Fatal(err)
	}
	return f
}

func stateOf(t *testing.T, states []store.ConversationState, conv string) store.ConversationState {
	t.Helper()
	for _, s := range states {
		if s.ConversationID == conv {
			return s
		}
	}
	t.Fatalf("no state for %s in %d states", conv, len(states))
	return store.ConversationState{}
}

func listIDs(states []store.ConversationState) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = s.ConversationID
	}
	return out
}

func sameSeqs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestConversationListContract: order (pinned, then newest message),
// paging and totals, settings, hiding until the next message.
func TestConversationListContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newSyncFixture(t, b)
			ctx := context.Background()
			page, total, err := f.convs.List(ctx, "alice", 0, 10)
			if err != nil || total != 3 || !sameIDs(listIDs(page), []string{f.ac, f.ab, f.g}) {
				t.Fatalf("list = %v (total %d), %v", listIDs(page), total, err)
			}
			ab := stateOf(t, page, f.ab)
			if ab.Type != domain.SessionSingle || ab.PeerUserID != "bob" || ab.MaxSeq != 4 || ab.LatestSendAt != t0+40 ||
				ab.Cursor.ReadSeq != 4 || ab.Cursor.DeliveredSeq != 4 {
				t.Errorf("alice's si_alice_bob = %+v", ab)
			}
			g := stateOf(t, page, f.g)
			if g.Type != domain.SessionGroup || g.GroupID != "g" || g.MaxSeq != 5 || g.VisibleMin() != 1 || g.LatestSendAt != t0+14 {
				t.Errorf("alice's sg_g = %+v", g)
			}

			pin := true
			if err := f.convs.UpdateSettings(ctx, store.ConversationSettings{OwnerID: "alice", ConversationID: f.g, IsPinned: &pin}); err != nil {
				t.Fatal(err)
			}
			opt := 1
			dave := domain.SingleConversationID("alice", "dave")
			if err := f.convs.UpdateSettings(ctx, store.ConversationSettings{OwnerID: "alice", ConversationID: dave,
				Type: domain.SessionSingle, PeerUserID: "dave", RecvMsgOpt: &opt}); err != nil {
				t.Fatal(err)
			}
			// The new row has no message: it sorts by its creation (now,
			// later than the fixture's messages).
			page, total, err = f.convs.List(ctx, "alice", 0, 2)
			if err != nil || total != 4 || !sameIDs(listIDs(page), []string{f.g, dave}) {
				t.Fatalf("pinned first, page of 2: %v (total %d), %v", listIDs(page), total, err)
			}
			if d := stateOf(t, page, dave); d.RecvMsgOpt != 1 || d.PeerUserID != "dave" || d.MaxSeq != 0 || !stateOf(t, page, f.g).IsPinned {
				t.Fatalf("settings: %+v", page)
			}
			page, _, _ = f.convs.List(ctx, "alice", 2, 2)
			if !sameIDs(listIDs(page), []string{f.ac, f.ab}) {
				t.Fatalf("second page: %v", listIDs(page))
			}

			// Deleting hides until a message above the seq it was hidden at.
			if err := f.convs.Hide(ctx, "alice", f.ab, 4); err != nil {
				t.Fatal(err)
			}
			if err := f.convs.Hide(ctx, "alice", f.ab, 2); err != nil { // never lowers
				t.Fatal(err)
			}
			page, total, _ = f.convs.List(ctx, "alice", 0, 10)
			if total != 3 || !sameIDs(listIDs(page), []string{f.g, dave, f.ac}) {
				t.Fatalf("after delete: %v (total %d)", listIDs(page), total)
			}
			if page, _, _ := f.convs.List(ctx, "bob", 0, 10); len(page) != 2 {
				t.Fatalf("bob's list changed by alice's delete: %v", listIDs(page))
			}
			if _, err := f.msgs.SaveBatch(ctx, []domain.Message{msgAt(f.ab, 5, "bob", t0+60, domain.MsgText)}); err != nil {
				t.Fatal(err)
			}
			page, total, _ = f.convs.List(ctx, "alice", 0, 10)
			if total != 4 || !sameIDs(listIDs(page), []string{f.g, dave, f.ab, f.ac}) {
				t.Fatalf("after a new message: %v (total %d)", listIDs(page), total)
			}
			if s := stateOf(t, page, f.ab); s.HiddenSeq != 4 {
				t.Errorf("hidden_seq = %d", s.HiddenSeq)
			}
		})
	}
}

// TestConversationCountsContract: unread and mention counts over ranges
// leave out the caller's own messages, notifications, failed and revoked
// ones; Latest skips failed placeholders; Messages and Senders read ranges.
func TestConversationCountsContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newSyncFixture(t, b)
			ctx := context.Background()
			all := []store.SeqRange{{f.ab, 0, 4}, {f.g, 0, 5}, {f.ac, 0, 1}}
			unread, err := f.convs.UnreadCounts(ctx, "alice", all)
			if err != nil || unread[f.ab] != 2 || unread[f.g] != 2 || unread[f.ac] != 0 {
				t.Fatalf("alice's unread = %v, %v", unread, err)
			}
			unread, _ = f.convs.UnreadCounts(ctx, "alice", []store.SeqRange{{f.ab, 2, 4}, {f.g, 3, 5}})
			if unread[f.ab] != 1 || unread[f.g] != 0 {
				t.Fatalf("alice's unread above 2 / 3 = %v", unread)
			}
			mentions, err := f.convs.MentionCounts(ctx, "alice", all)
			if err != nil || mentions[f.ab] != 1 || mentions[f.g] != 2 {
				t.Fatalf("alice's mentions = %v, %v", mentions, err)
			}
			// carol: bob's @all counts, alice's @all too; alice's @alice does not.
			if m, _ := f.convs.MentionCounts(ctx, "carol", all); m[f.g] != 2 {
				t.Fatalf("carol's mentions = %v", m)
			}
			if m, _ := f.convs.MentionCounts(ctx, "bob", all); m[f.g] != 1 {
				t.Fatalf("bob's mentions (alice's @all only) = %v", m)
			}
			revokes := store.NewRevokeRepo(f.db)
			if ok, err := revokes.Revoke(ctx, f.g, 2); err != nil || !ok {
				t.Fatalf("revoke: %v %v", ok, err)
			}
			if u, _ := f.convs.UnreadCounts(ctx, "alice", all); u[f.g] != 1 {
				t.Fatalf("unread after a revoke = %v", u)
			}
			if m, _ := f.convs.MentionCounts(ctx, "carol", all); m[f.g] != 1 {
				t.Fatalf("carol's mentions after a revoke = %v", m)
			}

			latest, err := f.convs.Latest(ctx, all)
			if err != nil || latest[f.ab].Seq != 4 || latest[f.g].Seq != 5 || latest[f.ac].Content.Text != "x" {
				t.Fatalf("latest = %+v, %v", latest, err)
			}
			if l, _ := f.convs.Latest(ctx, []store.SeqRange{{f.g, 0, 4}}); l[f.g].Seq != 3 {
				t.Fatalf("latest below a failed placeholder = %+v", l[f.g])
			}
			if l, _ := f.convs.Latest(ctx, []store.SeqRange{{f.g, 1, 2}}); l[f.g].Status != domain.StatusRevoked {
				t.Fatalf("a revoked latest message = %+v", l[f.g])
			}

			msgs, err := f.convs.Messages(ctx, []store.SeqRange{{f.g, 1, 5}, {f.ab, 2, 4}, {f.ac, 1, 1}})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, m := range msgs {
				got = append(got, m.Seq)
			}
			// by conversation ID (sg_g < si_…), ascending seq, failed left out
			if want := []int64{2, 3, 5, 3, 4}; !sameSeqs(got, want) || msgs[0].ConversationID != f.g {
				t.Fatalf("messages = %v, want %v", got, want)
			}
			senders, err := f.convs.Senders(ctx, []store.SeqRange{{f.g, 0, 5}, {f.ab, 0, 4}})
			if err != nil || len(senders[f.g]) != 2 || senders[f.g][0] != "alice" || len(senders[f.ab]) != 2 {
				t.Fatalf("senders = %v, %v", senders, err)
			}
			if s, _ := f.convs.Senders(ctx, []store.SeqRange{{f.g, 0, 1}}); len(s[f.g]) != 0 {
				t.Fatalf("notification senders = %v", s)
			}
		})
	}
}

// TestUndeliveredAndStatesContract: Undelivered lists only conversations
// with visible saved messages above the delivered cursor, within the
// member's bounds; States reads given IDs or all.
func TestUndeliveredAndStatesContract(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newSyncFixture(t, b)
			ctx := context.Background()
			und, err := f.convs.Undelivered(ctx, "bob")
			if err != nil || !sameIDs(listIDs(und), []string{f.ab, f.g}) {
				t.Fatalf("bob's undelivered = %v, %v", listIDs(und), err)
			}
			cursors := store.NewCursorRepo(f.db)
			if _, err := cursors.Advance(ctx, []domain.Cursor{{UserID: "bob", ConversationID: f.ab, DeliveredSeq: 4}}); err != nil {
				t.Fatal(err)
			}
			// carol left the group at seq 1: nothing of it above her cap.
			if err := f.db.Gorm.Exec("UPDATE seq_users SET max_seq = 1 WHERE user_id = 'carol' AND conversation_id = ?", f.g).Error; err != nil {
				t.Fatal(err)
			}
			und, _ = f.convs.Undelivered(ctx, "bob")
			if !sameIDs(listIDs(und), []string{f.g}) {
				t.Fatalf("bob's undelivered after an ACK = %v", listIDs(und))
			}
			und, _ = f.convs.Undelivered(ctx, "carol")
			if !sameIDs(listIDs(und), []string{f.ac, f.g}) || und[1].VisibleMax() != 1 {
				t.Fatalf("carol, capped at 1, has undelivered %v", listIDs(und))
			}
			if _, err := cursors.Advance(ctx, []domain.Cursor{{UserID: "carol", ConversationID: f.g, DeliveredSeq: 1}}); err != nil {
				t.Fatal(err)
			}
			if und, _ = f.convs.Undelivered(ctx, "carol"); !sameIDs(listIDs(und), []string{f.ac}) {
				t.Fatalf("carol delivered up to her cap, still undelivered: %v", listIDs(und))
			}
			st, err := f.convs.States(ctx, "carol", []string{f.g, "si_nobody_here"})
			if err != nil || len(st) != 1 || st[0].VisibleMax() != 1 || st[0].MaxSeq != 5 {
				t.Fatalf("carol's states = %+v, %v", st, err)
			}
			st, _ = f.convs.States(ctx, "alice", nil)
			if len(st) != 3 {
				t.Fatalf("all of alice's states: %v", listIDs(st))
			}
			// Keyset pages in conversation ID order cover the same states once.
			var paged []string
			after := ""
			for range 4 {
				page, err := f.convs.StatesPage(ctx, "alice", after, 2)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				for _, s := range page {
					if s.ConversationID <= after {
						t.Fatalf("page after %q holds %q", after, s.ConversationID)
					}
					paged = append(paged, s.ConversationID)
					after = s.ConversationID
				}
			}
			all := listIDs(st)
			slices.Sort(all)
			if !sameIDs(paged, all) || len(paged) != 3 {
				t.Fatalf("alice's paged states %v, want %v", paged, listIDs(st))
			}
		})
	}
}
