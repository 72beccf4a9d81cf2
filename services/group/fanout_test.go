package group_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
)

func groupMsg(groupID, sender string, seq int64) *domain.Message {
	return &domain.Message{
		ServerMsgID: fmt.Sprintf("srv-%d", seq), ClientMsgID: fmt.Sprintf("c-%d", seq), ConversationID: domain.GroupConversationID(groupID),
		Seq: seq, SenderID: sender, GroupID: groupID, SessionType: domain.SessionGroup, MsgType: domain.MsgText,
		Content: domain.Content{Text: "hi"}, Status: domain.StatusNormal, SendAt: 1,
	}
}

func notification(groupID, op string, t domain.MsgType, seq int64, users ...string) *domain.Message {
	m := groupMsg(groupID, op, seq)
	body, _ := json.Marshal(group.NotificationJSON{GroupID: groupID, OpUserID: op, UserIDs: users})
	m.MsgType, m.Content = t, domain.Content{Custom: string(body)}
	return m
}

// TestFanoutTo2000MembersWith500Online: every online member gets each
// message exactly once in the chosen form; offline members get nothing;
// the sending connection is skipped and the sender's other one is not.
func TestFanoutTo2000MembersWith500Online(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := userIDs("u", 2000)
	e.addUsers(ids...)
	g := e.create(ids[0], ids[1:]...)
	if g.MemberCount != 2000 {
		t.Fatalf("member count %d", g.MemberCount)
	}
	sender := ids[0]
	e.reg.Connect(sender, "sender/phone", "sender/desktop")
	for _, u := range ids[1:500] {
		e.reg.Connect(u)
	}
	base := e.notifier.advance(g.GroupID, 0)

	for i, tc := range []struct {
		name     string
		push     configs.GroupPush
		wantCode int // 0: nothing
	}{
		{"push", configs.GroupPush{Mode: "push", Workers: 8}, wire.PushMsg},
		{"notify", configs.GroupPush{Mode: "notify", Workers: 8}, wire.PushGroupNotify},
		{"none", configs.GroupPush{Mode: "none", Workers: 8}, 0},
		{"auto: 2000 members is notify", configs.Default().Group.Push, wire.PushGroupNotify},
		{"auto: small thresholds exceeded is none", configs.GroupPush{Mode: "auto", GroupSizeThreshold: 100, OnlineUserThreshold: 100,
			NotifyMaxOnlineUser: 400, HugeGroupNoNotifySize: 5000, Workers: 8}, 0},
		{"auto: under every threshold is push", configs.GroupPush{Mode: "auto", GroupSizeThreshold: 3000, OnlineUserThreshold: 600,
			NotifyMaxOnlineUser: 3000, HugeGroupNoNotifySize: 10000, Workers: 3}, wire.PushMsg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.reg.Reset()
			reg := prometheus.NewRegistry()
			f := group.NewFanout(e.members, ws.NewPushes(e.reg, quiet), tc.push, reg)
			seq := base + int64(i) + 1
			if err := f.FanoutGroup(bg, groupMsg(g.GroupID, sender, seq), "sender/phone"); err != nil {
				t.Fatal(err)
			}
			for n, u := range ids {
				got := e.reg.Pushes(u)
				want := 0
				if tc.wantCode != 0 && n < 500 {
					want = 1
				}
				if len(got) != want {
					t.Fatalf("%s got %d frames, want %d: %+v", u, len(got), want, got)
				}
				if want == 1 && (got[0].Code != tc.wantCode || got[0].Seq() != seq) {
					t.Fatalf("%s got %+v, want code %d seq %d", u, got[0], tc.wantCode, seq)
				}
				if want == 1 && u == sender && got[0].Conn != "sender/desktop" {
					t.Fatalf("sender's frame went to %s", got[0].Conn)
				}
			}
			mode := map[int]string{wire.PushMsg: "push", wire.PushGroupNotify: "notify", 0: "none"}[tc.wantCode]
			if c := counter(t, reg, "nexo_group_push_mode_total", mode); c != 1 {
				t.Fatalf("mode %s counted %v times", mode, c)
			}
		})
	}
}

// TestFanoutHonoursVisibilityAndRecvMsgOpt: a joiner gets nothing before
// its join_seq; a kicked member no push once kicked except its kick
// notification (its cap; earlier messages it pulls); recv_msg_opt 1
// silences pushes except the sender's own.
func TestFanoutHonoursVisibilityAndRecvMsgOpt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config) { c.Group.Push.Mode = "push" })
	e.addUsers("alice", "bob", "carol", "dave", "erin", "muted", "quiet")
	g := e.create("alice", "bob", "carol", "muted", "quiet")
	gid := g.GroupID
	for _, u := range []string{"alice", "bob", "carol", "dave", "erin", "muted", "quiet"} {
		e.reg.Connect(u)
	}
	e.reg.Connect("muted", "muted/c2")
	conv := domain.GroupConversationID(gid)
	e.db.Gorm.Exec("UPDATE conversations SET recv_msg_opt = 1 WHERE owner_id = 'muted' AND conversation_id = ?", conv)
	e.db.Gorm.Exec("UPDATE conversations SET recv_msg_opt = 2 WHERE owner_id = 'quiet' AND conversation_id = ?", conv)
	if err := e.members.Invalidate(bg, gid); err != nil {
		t.Fatal(err)
	}

	e.notifier.advance(gid, 10) // 11 chat messages so far (1 = creation)
	dave := must(e.svc.Join(bg, "dave", gid))(t)
	kick := must(e.svc.Kick(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"carol"}}))(t)
	kickN, _ := e.notifier.last(t)
	if dave.JoinSeq != 12 || kickN.Seq != 13 || len(kick.Kicked) != 1 {
		t.Fatalf("setup: join_seq %d, kick seq %d", dave.JoinSeq, kickN.Seq)
	}
	// A message allocated before dave's join but delivered after it, then
	// the notifications, then a message after both.
	for _, m := range []*domain.Message{
		groupMsg(gid, "bob", 11),
		notification(gid, "dave", group.NotifyMemberJoined, 12, "dave"),
		notification(gid, "alice", group.NotifyMemberKicked, 13, "carol"),
		groupMsg(gid, "muted", 14),
	} {
		if err := e.fanout.FanoutGroup(bg, m, "muted/c2"); err != nil {
			t.Fatal(err)
		}
	}
	seqs := func(u string) []int64 {
		var out []int64
		for _, f := range e.reg.Pushes(u) {
			out = append(out, f.Seq())
		}
		return out
	}
	for u, want := range map[string][]int64{
		"alice": {11, 12, 13, 14},
		"bob":   {11, 12, 13, 14},
		"dave":  {12, 13, 14},     // nothing before his join_seq
		"carol": {13},             // pushes stop at her kick; she still gets the kick notification (her cap)
		"erin":  nil,              // never a member
		"muted": {14},             // recv_msg_opt 1: only its own message, on its other connection
		"quiet": {11, 12, 13, 14}, // recv_msg_opt 2: same frames; the client does not notify
	} {
		if got := seqs(u); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s got seqs %v, want %v", u, got, want)
		}
	}
	if fr := e.reg.Pushes("muted"); len(fr) != 1 || fr[0].Conn != "muted/c1" {
		t.Errorf("muted's own message went to %+v", fr)
	}
}

// TestFanoutOfNotificationsBeforeTheirWrite: a membership notification is
// fanned out to the users it names even if the change is not written yet
// (new group, new members), and not to a user who joined again later.
func TestFanoutOfNotificationsBeforeTheirWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config) { c.Group.Push.Mode = "push" })
	e.addUsers("alice", "bob", "carol", "dave")
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		e.reg.Connect(u)
	}
	// The group does not exist yet: its creation notification still reaches its members.
	if err := e.fanout.FanoutGroup(bg, notification("future", "alice", group.NotifyGroupCreated, 1, "alice", "bob", "carol"), ""); err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]int{"alice": 1, "bob": 1, "carol": 1, "dave": 0} {
		if got := len(e.reg.Pushes(u)); got != want {
			t.Errorf("%s got %d frames of the creation, want %d", u, got, want)
		}
	}
	// An ordinary message of an unknown group goes nowhere and is no error.
	e.reg.Reset()
	if err := e.fanout.FanoutGroup(bg, groupMsg("future", "alice", 2), ""); err != nil || len(e.reg.Pushes("alice")) != 0 {
		t.Fatalf("message of an unknown group: %v, %d frames", err, len(e.reg.Pushes("alice")))
	}

	// An old quit notification redelivered after the user joined again.
	g := e.create("alice", "bob", "carol")
	must(e.svc.Quit(bg, "bob", g.GroupID))(t)
	quitN, _ := e.notifier.last(t)
	must(e.svc.Join(bg, "bob", g.GroupID))(t)
	e.reg.Reset()
	if err := e.fanout.FanoutGroup(bg, notification(g.GroupID, "bob", group.NotifyMemberQuit, quitN.Seq, "bob"), ""); err != nil {
		t.Fatal(err)
	}
	if got := len(e.reg.Pushes("bob")); got != 0 {
		t.Fatalf("bob got %d frames of a notification older than his join", got)
	}
	if got := len(e.reg.Pushes("alice")); got != 1 {
		t.Fatalf("alice got %d frames", got)
	}
}

// recordingPusher keeps every push; every user is online.
type recordingPusher struct {
	mu     sync.Mutex
	pushes []domain.Push
}

func (r *recordingPusher) PushToUsers(_ context.Context, userIDs []string, p domain.Push, _ string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pushes = append(r.pushes, p)
	return len(userIDs)
}

func (r *recordingPusher) OnlineOf(_ context.Context, userIDs []string) []string { return userIDs }

// TestFanoutFramesUnchanged: the push of each mode encodes (ws.EncodePush)
// to the very frame the fanout encoded itself before it pushed domain
// pushes: the same bytes (but the time) and the same audit tag.
func TestFanoutFramesUnchanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUsers("alice", "bob", "carol")
	g := e.create("alice", "bob", "carol")
	m := groupMsg(g.GroupID, "alice", e.notifier.advance(g.GroupID, 1))
	m.Content = domain.Content{Text: "<b>hi</b> & \u2028 👋", Custom: `{"k":[1,2]}`}
	m.AtUserIDs = []string{"bob"}
	ref := ws.MsgRef{ServerMsgID: m.ServerMsgID, ConversationID: m.ConversationID, Seq: m.Seq}
	ts := regexp.MustCompile(`"ts":\d+`)
	for _, tc := range []struct {
		mode string
		old  wire.Response
	}{
		{configs.GroupPushPush, wire.Response{ReqIdentifier: wire.PushMsg, Data: chat.ToJSON(m)}},
		{configs.GroupPushNotify, wire.Response{ReqIdentifier: wire.PushGroupNotify,
			Data: group.NotifyJSON{ConversationID: m.ConversationID, MaxSeq: m.Seq}}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			rec := &recordingPusher{}
			f := group.NewFanout(e.members, rec, configs.GroupPush{Mode: tc.mode, Workers: 1}, nil)
			if err := f.FanoutGroup(bg, m, ""); err != nil {
				t.Fatal(err)
			}
			if len(rec.pushes) != 1 {
				t.Fatalf("%d pushes, want 1", len(rec.pushes))
			}
			got := must(ws.EncodePush(rec.pushes[0]))(t)
			old := must(ws.EncodeFrame(tc.old))(t).WithMsg(ref)
			gotB, oldB := ts.ReplaceAll(got.Bytes(), []byte(`"ts":0`)), ts.ReplaceAll(old.Bytes(), []byte(`"ts":0`))
			if !bytes.Equal(gotB, oldB) {
				t.Fatalf("frame\n%s\nwant\n%s", gotB, oldB)
			}
			gotRef, ok := got.Msg()
			if oldRef, _ := old.Msg(); !ok || gotRef != oldRef {
				t.Fatalf("tagged %+v (%v), want %+v", gotRef, ok, oldRef)
			}
		})
	}
}

// sharingPusher is a Pusher that offers Shared (as ws.Pushes does): it
// counts the encodings and the parts pushed with them.
type sharingPusher struct {
	mu      sync.Mutex
	encodes int
	users   map[string]int
	direct  int
}

func (s *sharingPusher) Shared(domain.Push) (func(context.Context, []string, string) int, bool) {
	s.mu.Lock()
	s.encodes++
	s.mu.Unlock()
	return func(_ context.Context, userIDs []string, _ string) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, u := range userIDs {
			s.users[u]++
		}
		return len(userIDs)
	}, true
}

func (s *sharingPusher) PushToUsers(_ context.Context, userIDs []string, _ domain.Push, _ string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.direct++
	return len(userIDs)
}

func (s *sharingPusher) OnlineOf(_ context.Context, userIDs []string) []string { return userIDs }

// A fanout split over several goroutines encodes its push once for all of
// them, and every member gets it exactly once.
func TestFanoutEncodesOncePerMessageAcrossParts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := userIDs("p", 300)
	e.addUsers(ids...)
	g := e.create(ids[0], ids[1:]...)
	sp := &sharingPusher{users: map[string]int{}}
	f := group.NewFanout(e.members, sp, configs.GroupPush{Mode: configs.GroupPushPush, Workers: 4}, nil)
	m := groupMsg(g.GroupID, ids[0], e.notifier.advance(g.GroupID, 1))
	if err := f.FanoutGroup(bg, m, ""); err != nil {
		t.Fatal(err)
	}
	if sp.encodes != 1 || sp.direct != 0 {
		t.Fatalf("%d encodings and %d unshared pushes for one message to 300 members in parts, want 1 and 0", sp.encodes, sp.direct)
	}
	if len(sp.users) != 300 {
		t.Fatalf("%d members reached, want 300", len(sp.users))
	}
	for u, n := range sp.users {
		if n != 1 {
			t.Fatalf("%s got the push %d times", u, n)
		}
	}
}
