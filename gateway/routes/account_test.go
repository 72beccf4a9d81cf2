package routes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api/apitest"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store"
)

type profileAnswer struct {
	UserID       string `json:"user_id"`
	Nickname     string `json:"nickname"`
	Avatar       string `json:"avatar"`
	CreatedAt    int64  `json:"created_at"`
	UpdatedAt    int64  `json:"updated_at"`
	GroupInvites string `json:"group_invites"`
}

// TestUserAndAuthFlow walks register → login → info → update → refresh →
// logout through the real Hertz handlers, MariaDB and Redis.
func TestUserAndAuthFlow(t *testing.T) {
	t.Parallel()
	e := newAccountEnv(t)
	ctx := context.Background()
	users := store.NewUserRepo(e.db)

	// Register with a chosen ID and with a generated one.
	r := e.do(t, "POST", "/user/register", `{"user_id":"alice","nickname":"Alice","password":"correct horse","avatar":"https://a/1.png"}`, "")
	apitest.OK(t, r)
	var reg struct {
		UserID string `json:"user_id"`
	}
	r.Decode(t, &reg)
	if reg.UserID != "alice" {
		t.Fatalf("registered %q", reg.UserID)
	}
	r = e.do(t, "POST", "/user/register", `{"nickname":"Bob","password":"battery staple"}`, "")
	apitest.OK(t, r)
	r.Decode(t, &reg)
	if id, err := uuid.Parse(reg.UserID); err != nil || id.Version() != 7 {
		t.Fatalf("generated user_id %q is not a UUIDv7", reg.UserID)
	}
	bob := reg.UserID
	stored, err := users.Get(ctx, "alice")
	if err != nil || stored.PasswordHash == "" || stored.PasswordHash == "correct horse" {
		t.Fatalf("stored alice %+v, %v: want a password hash", stored, err)
	}

	// A taken ID is 409 and changes nothing.
	r = e.do(t, "POST", "/user/register", `{"user_id":"alice","nickname":"Mallory","password":"plum-tart-9"}`, "")
	apitest.Err(t, r, wire.ReasonUserExists, "alice")
	if again, _ := users.Get(ctx, "alice"); again != stored {
		t.Fatalf("duplicate register changed alice: %+v", again)
	}

	// Bad credentials: the same answer for an unknown user and a wrong password.
	wrong := e.do(t, "POST", "/auth/login", `{"user_id":"alice","password":"wrong password","platform_id":5}`, "")
	unknown := e.do(t, "POST", "/auth/login", `{"user_id":"nobody","password":"correct horse","platform_id":5}`, "")
	apitest.Err(t, wrong, wire.ReasonBadCredentials, "")
	apitest.Err(t, unknown, wire.ReasonBadCredentials, "")
	if withoutRequestID(wrong) != withoutRequestID(unknown) {
		t.Fatalf("unknown user and wrong password answer differently:\n%s\n%s", wrong.Raw, unknown.Raw)
	}

	// Login.
	before := time.Now()
	tok := e.login(t, "alice", "correct horse", 5)
	// exp has whole seconds, from a clock read after before: up to a
	// second past 24h when the login crosses a second boundary.
	if ttl := time.Duration(tok.ExpireAt-before.UnixMilli()) * time.Millisecond; ttl < 23*time.Hour || ttl > 24*time.Hour+time.Second {
		t.Fatalf("expire_at %d is %v away, want about jwt.ttl (24h)", tok.ExpireAt, ttl)
	}

	// Info: own (no user_id), someone else's, unknown.
	r = e.do(t, "GET", "/user/info", "", tok.Token)
	apitest.OK(t, r)
	var p profileAnswer
	r.Decode(t, &p)
	if p.UserID != "alice" || p.Nickname != "Alice" || p.Avatar != "https://a/1.png" || p.CreatedAt != stored.CreatedAt || p.UpdatedAt != stored.UpdatedAt {
		t.Fatalf("own info %+v, stored %+v", p, stored)
	}
	if raw := r.Raw; strings.Contains(raw, "password") {
		t.Fatalf("info leaks the password hash: %s", raw)
	}
	if p.GroupInvites != "everyone" {
		t.Fatalf("own group_invites %q, want everyone", p.GroupInvites)
	}
	// Someone alice shares nothing with reads as an unknown user, word for
	// word: /user/info does not tell whether a user_id exists.
	stranger := e.do(t, "GET", "/user/info?user_id="+bob, "", tok.Token)
	ghost := e.do(t, "GET", "/user/info?user_id="+strings.Replace(bob, bob[:8], "00000000", 1), "", tok.Token)
	apitest.Err(t, stranger, wire.ReasonUserNotFound, "")
	apitest.Err(t, ghost, wire.ReasonUserNotFound, "")
	if strings.ReplaceAll(withoutRequestID(stranger), bob, "X") != strings.ReplaceAll(withoutRequestID(ghost), strings.Replace(bob, bob[:8], "00000000", 1), "X") {
		t.Fatalf("a stranger and an unknown user answer differently:\n%s\n%s", stranger.Raw, ghost.Raw)
	}
	// Once they share a group, bob's public profile shows.
	if _, err := store.NewGroupRepo(e.db).Create(ctx, domain.Group{ID: "g-" + bob, Name: "team", CreatorUserID: "alice", OwnerUserID: "alice", JoinPolicy: "open"},
		[]domain.GroupMember{{UserID: "alice", RoleLevel: domain.RoleOwner, JoinSeq: 1}, {UserID: bob, RoleLevel: domain.RoleMember, JoinSeq: 1}}); err != nil {
		t.Fatal(err)
	}
	r = e.do(t, "GET", "/user/info?user_id="+bob, "", tok.Token)
	apitest.OK(t, r)
	// Another user's profile has the public fields only.
	var fields map[string]any
	r.Decode(t, &fields)
	if len(fields) != 3 || fields["user_id"] != bob || fields["nickname"] != "Bob" || fields["avatar"] == nil {
		t.Fatalf("bob's info %s: want exactly user_id, nickname, avatar", r.Data)
	}
	apitest.Err(t, e.do(t, "GET", "/user/info?user_id=ghost", "", tok.Token), wire.ReasonUserNotFound, "")
	apitest.Err(t, e.do(t, "GET", "/user/info?user_id=a%20b", "", tok.Token), wire.ReasonBadRequest, "user_id")

	// Update own profile.
	r = e.do(t, "PUT", "/user/update", `{"nickname":"Alice L."}`, tok.Token)
	apitest.OK(t, r)
	r.Decode(t, &p)
	if p.Nickname != "Alice L." || p.Avatar != "https://a/1.png" || p.UpdatedAt < stored.UpdatedAt {
		t.Fatalf("after update %+v", p)
	}
	r = e.do(t, "PUT", "/user/update", `{"avatar":""}`, tok.Token)
	apitest.OK(t, r)
	r = e.do(t, "PUT", "/user/update", `{"group_invites":"shared_groups"}`, tok.Token)
	apitest.OK(t, r)
	if r.Decode(t, &p); p.GroupInvites != "shared_groups" || p.Nickname != "Alice L." {
		t.Fatalf("after the group_invites update %+v", p)
	}
	apitest.Err(t, e.do(t, "PUT", "/user/update", `{"group_invites":"friends"}`, tok.Token), wire.ReasonBadRequest, "group_invites")
	if got, _ := users.Get(ctx, "alice"); got.Nickname != "Alice L." || got.Avatar != "" || got.PasswordHash != stored.PasswordHash {
		t.Fatalf("stored after updates %+v", got)
	}

	// Refresh: the old token is revoked, twice-refreshing fails.
	r = e.do(t, "POST", "/auth/refresh", "", tok.Token)
	apitest.OK(t, r)
	var tok2 tokenAnswer
	r.Decode(t, &tok2)
	if tok2.Token == tok.Token || tok2.ExpireAt < tok.ExpireAt {
		t.Fatalf("refresh returned %+v after %+v", tok2, tok)
	}
	apitest.Err(t, e.do(t, "GET", "/user/info", "", tok.Token), wire.ReasonTokenRevoked, "")
	apitest.Err(t, e.do(t, "POST", "/auth/refresh", "", tok.Token), wire.ReasonTokenRevoked, "")
	apitest.OK(t, e.do(t, "GET", "/user/info", "", tok2.Token))

	// A login on another platform is independent; on the same one it replaces.
	ios := e.login(t, "alice", "correct horse", 1)
	apitest.OK(t, e.do(t, "GET", "/user/info", "", tok2.Token))
	web := e.login(t, "alice", "correct horse", 5)
	apitest.Err(t, e.do(t, "GET", "/user/info", "", tok2.Token), wire.ReasonTokenRevoked, "")

	// The refresh told OnLogout about the token it revoked (tok), and the
	// replacing login about the one it replaced (tok2), so their live
	// sessions close; logout revokes and tells it too.
	calls := e.logout.get()
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "alice/5/") || !strings.HasPrefix(calls[1], "alice/5/") || calls[0] == calls[1] {
		t.Fatalf("OnLogout calls after refresh and the replacing login %v, want two for alice/5", calls)
	}
	apitest.OK(t, e.do(t, "POST", "/auth/logout", "", web.Token))
	calls = e.logout.get()
	if len(calls) != 3 || !strings.HasPrefix(calls[2], "alice/5/") || calls[2] == calls[1] {
		t.Fatalf("OnLogout calls %v, want a third, different one for alice/5", calls)
	}
	for _, route := range [][2]string{{"GET", "/user/info"}, {"POST", "/auth/refresh"}, {"POST", "/auth/logout"}} {
		apitest.Err(t, e.do(t, route[0], route[1], "", web.Token), wire.ReasonTokenRevoked, "")
	}
	apitest.OK(t, e.do(t, "GET", "/user/info", "", ios.Token))
	if n := e.rdb.Exists(ctx, e.keys.Token("alice", 5)).Val(); n != 0 {
		t.Fatalf("token record of alice/5 still present after logout")
	}
}
