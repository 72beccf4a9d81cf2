package sync_test

import (
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
)

// TestMentionsAreChecked: at_user_ids must name members of the group
// (active ones), "all" is for the owner and admins, and in single chat
// only the two parties; a refused send allocates nothing.
func TestMentionsAreChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.addUsers("alice", "bob", "carol", "dave", "erin")
	gid := e.createGroup("alice", "bob", "carol", "erin")
	if _, err := e.groups.Kick(bg, "alice", group.UsersRequest{GroupID: gid, UserIDs: []string{"erin"}}); err != nil {
		t.Fatal(err)
	}
	gconv := domain.GroupConversationID(gid)
	before, _ := e.seqs.MaxSeq(bg, gconv)
	cases := []struct {
		name   string
		sender string
		at     []string
		reason wire.Reason // "" = allowed
	}{
		{"a member", "bob", []string{"carol"}, ""},
		{"two members and a repeat", "bob", []string{"carol", "alice", "carol"}, ""},
		{"not a member", "bob", []string{"dave"}, wire.ReasonBadRequest},
		{"kicked", "bob", []string{"erin"}, wire.ReasonBadRequest},
		{"all by a member", "bob", []string{"all"}, wire.ReasonForbidden},
		{"all by the owner", "alice", []string{"all"}, ""},
	}
	allowed := 0
	for _, tc := range cases {
		_, err := e.sendGroup(tc.sender, gid, tc.at...)
		if tc.reason == "" {
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			allowed++
			continue
		}
		wantReason(t, err, tc.reason)
	}
	if after, _ := e.seqs.MaxSeq(bg, gconv); after != before+int64(allowed) {
		t.Fatalf("seqs %d -> %d for %d allowed sends: a refused send allocated", before, after, allowed)
	}
	// An admin may mention all.
	if _, err := e.groups.SetRole(bg, "alice", group.SetRoleRequest{GroupID: gid, UserID: "bob", RoleLevel: int(domain.RoleAdmin)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sendGroup("bob", gid, "all"); err != nil {
		t.Fatalf("admin @all: %v", err)
	}

	for _, tc := range []struct {
		at     []string
		reason wire.Reason
	}{{[]string{"bob"}, ""}, {[]string{"alice"}, ""}, {[]string{"carol"}, wire.ReasonBadRequest}, {[]string{"all"}, wire.ReasonBadRequest}} {
		_, err := e.chat.Send(bg, chat.Origin{UserID: "alice"}, chat.SendRequest{ClientMsgID: "s-" + tc.at[0], SessionType: 1, RecvID: "bob",
			MsgType: int(domain.MsgText), Content: chat.ContentJSON{Text: "hi"}, AtUserIDs: tc.at})
		if tc.reason == "" && err != nil {
			t.Fatalf("single chat @%v: %v", tc.at, err)
		}
		if tc.reason != "" {
			wantReason(t, err, tc.reason)
		}
	}
	// Stored and pulled with the message.
	res, err := e.puller.Pull(bg, "carol", chat.PullRequest{ConversationID: gconv, BeginSeq: before + 1, Limit: 1})
	if err != nil || len(res.Messages) != 1 || len(res.Messages[0].AtUserIDs) != 1 || res.Messages[0].AtUserIDs[0] != "carol" {
		t.Fatalf("pulled %+v, %v", res, err)
	}
}
