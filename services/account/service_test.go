package account

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// The HTTP flows (register, login, refresh, password change, limits on
// real Redis) are tested through the routes in gateway/routes; these tests
// pin the rules on fakes.

type fakeUsers struct{ m map[string]domain.User }

func (f *fakeUsers) Create(_ context.Context, u domain.User) (domain.User, error) {
	if _, ok := f.m[u.ID]; ok {
		return domain.User{}, domain.ErrUserExists
	}
	f.m[u.ID] = u
	return u, nil
}

func (f *fakeUsers) Get(_ context.Context, id string) (domain.User, error) {
	u, ok := f.m[id]
	if !ok {
		return domain.User{}, domain.ErrUserNotFound
	}
	return u, nil
}

func (f *fakeUsers) Update(_ context.Context, id string, up store.UserUpdate) (domain.User, error) {
	u, err := f.Get(context.Background(), id)
	if up.Nickname != nil {
		u.Nickname = *up.Nickname
	}
	if up.Avatar != nil {
		u.Avatar = *up.Avatar
	}
	if up.GroupInvites != nil {
		u.GroupInvites = *up.GroupInvites
	}
	f.m[id] = u
	return u, err
}

func (f *fakeUsers) SetPassword(_ context.Context, id, hash string) error {
	u := f.m[id]
	u.PasswordHash = hash
	f.m[id] = u
	return nil
}

func (f *fakeUsers) SetDisabled(_ context.Context, id string, disabled bool) (domain.User, error) {
	u := f.m[id]
	u.Disabled = disabled
	f.m[id] = u
	return u, nil
}

func (f *fakeUsers) Delete(_ context.Context, id string) error { delete(f.m, id); return nil }

// fakePasswords "hashes" by prefixing; an empty hash never matches.
type fakePasswords struct{ checks int }

func (p *fakePasswords) Hash(pw string) (string, error) { return "h:" + pw, nil }

func (p *fakePasswords) Check(hash, pw string) error {
	p.checks++
	if hash == "" || hash != "h:"+pw {
		return domain.ErrBadCredentials
	}
	return nil
}

type fakeTokens struct {
	n       int
	revoked map[int]string
}

func (f *fakeTokens) Issue(_ context.Context, userID string, platformID int) (IssuedToken, error) {
	f.n++
	return IssuedToken{Token: fmt.Sprint("t", f.n), ExpiresAt: time.UnixMilli(1000), Replaced: "old"}, nil
}

func (f *fakeTokens) Refresh(context.Context, Caller) (IssuedToken, error) { return IssuedToken{}, nil }
func (f *fakeTokens) Revoke(context.Context, Caller) error                 { return nil }

func (f *fakeTokens) RevokeAll(context.Context, string, Caller) (map[int]string, error) {
	return f.revoked, nil
}

type fakeStore struct{ err error }

func (f fakeStore) RevokeUser(context.Context, string) error        { return f.err }
func (f fakeStore) SetDisabled(context.Context, string, bool) error { return f.err }

// recorder is the Sessions and the Limits: it records every call in
// order; refuse is what the limits answer.
type recorder struct {
	calls  []string
	refuse error
}

func (r *recorder) add(call string) { r.calls = append(r.calls, call) }

func (r *recorder) take() []string {
	c := r.calls
	r.calls = nil
	return c
}

func (r *recorder) Disconnect(user string, platform int, jti string) {
	r.add(fmt.Sprintf("%s/%d/%s", user, platform, jti))
}

func (r *recorder) AllowRegister(context.Context, string) error {
	r.add("allow register")
	return r.refuse
}

func (r *recorder) AllowLogin(_ context.Context, _, user string) error {
	r.add("allow " + user)
	return r.refuse
}

func (r *recorder) LoginFailed(_ context.Context, _, user string) { r.add("failed " + user) }
func (r *recorder) LoginSucceeded(_ context.Context, user string) { r.add("succeeded " + user) }

func newTestService(users map[string]domain.User, r *recorder) *Service {
	return newTestServiceOf(users, r, &fakePasswords{})
}

func newTestServiceOf(users map[string]domain.User, r *recorder, p Passwords) *Service {
	return NewService(Deps{Users: &fakeUsers{m: users}, Passwords: p, Tokens: &fakeTokens{revoked: map[int]string{5: "j5", 1: "j1"}},
		Store: fakeStore{}, Sessions: r, Limits: r, Auth: configs.Auth{HashConcurrency: 1, HashWait: time.Second}})
}

func TestRequestRules(t *testing.T) {
	long := strings.Repeat("a", domain.MaxIDLen+1)
	nick := "n"
	dmNobody, dmBad := domain.DMNobody, domain.DMPolicy("friends")
	for _, tc := range []struct {
		name   string
		req    interface{ Validate() error }
		detail string // "" = valid
	}{
		{"register", &RegisterRequest{Nickname: "n", Password: "plum-tart-9"}, ""},
		{"register bad id", &RegisterRequest{UserID: "a b", Nickname: "n", Password: "plum-tart-9"}, "user_id must be 1–64 characters of A-Z a-z 0-9 _ -"},
		{"register reserved", &RegisterRequest{UserID: "ALL", Nickname: "n", Password: "plum-tart-9"}, `user_id "ALL" is reserved`},
		{"register common password", &RegisterRequest{Nickname: "n", Password: "Password1"}, "password is one of the 10000 most common passwords"},
		{"register short password", &RegisterRequest{Nickname: "n", Password: "1234567"}, "password must be 8–128 characters (got 7)"},
		{"register no nickname", &RegisterRequest{Password: "plum-tart-9"}, "nickname is required"},
		{"login", &LoginRequest{UserID: "u", Password: "p", PlatformID: 5}, ""},
		{"login no user", &LoginRequest{Password: "p", PlatformID: 5}, "user_id is required"},
		{"login long user", &LoginRequest{UserID: long, Password: "p", PlatformID: 5}, "user_id must be 1–64"},
		{"login platform", &LoginRequest{UserID: "u", Password: "p", PlatformID: 11}, "platform_id must be an OpenIM platform number 1–10"},
		{"password same", &PasswordRequest{OldPassword: "plum-tart-9", NewPassword: "plum-tart-9"}, "new_password must differ from old_password"},
		{"password common", &PasswordRequest{OldPassword: "x", NewPassword: "12345678"}, "new_password is one of"},
		{"update nothing", &UpdateRequest{}, "body must set nickname, avatar, group_invites and/or dm_policy"},
		{"update dm_policy", &UpdateRequest{DMPolicy: &dmNobody}, ""},
		{"update bad dm_policy", &UpdateRequest{DMPolicy: &dmBad}, "dm_policy must be everyone, shared_groups or nobody"},
		{"api update bad dm_policy", &UpdateUserRequest{UserID: "u", DMPolicy: &dmBad}, "dm_policy must be everyone, shared_groups or nobody"},
		{"update", &UpdateRequest{Nickname: &nick}, ""},
		{"api create", &CreateUserRequest{UserID: "u", Nickname: "n"}, ""},
		{"api create no id", &CreateUserRequest{Nickname: "n"}, "user_id is required"},
		{"api create short password", &CreateUserRequest{UserID: "u", Nickname: "n", Password: "short"}, "password must be 8–128"},
		{"api update bad id", &UpdateUserRequest{UserID: "a/b"}, "user_id must be 1–64"},
		{"api user", &UserRequest{UserID: "u"}, ""},
		{"api token platform", &TokenRequest{UserID: "u"}, "platform_id must be an OpenIM platform number"},
	} {
		err := tc.req.Validate()
		var de *domain.Error
		switch {
		case tc.detail == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.detail != "" && (!errors.As(err, &de) || de.Kind != domain.ErrInvalidArgument || !strings.HasPrefix(de.Detail, tc.detail)):
			t.Errorf("%s: got %v, want invalid argument %q…", tc.name, err, tc.detail)
		}
	}
}

func TestLoginRules(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	p := &fakePasswords{}
	s := newTestServiceOf(map[string]domain.User{
		"ann": {ID: "ann", PasswordHash: "h:right-pass"},
		"dan": {ID: "dan", PasswordHash: "h:right-pass", Disabled: true},
	}, r, p)
	login := func(user, pw string) error {
		_, err := s.Login(ctx, "ip", LoginRequest{UserID: user, Password: pw, PlatformID: 5})
		return err
	}
	// Unknown user and wrong password: the same error, both hashed, both counted.
	if err := login("nobody", "right-pass"); !errors.Is(err, domain.ErrBadCredentials) {
		t.Fatalf("unknown user: %v", err)
	}
	if err := login("ann", "wrong-pass"); !errors.Is(err, domain.ErrBadCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	if got, want := r.take(), []string{"allow nobody", "failed nobody", "allow ann", "failed ann"}; !slices.Equal(got, want) || p.checks != 2 {
		t.Fatalf("calls %v (%d checks), want %v and 2 checks", got, p.checks, want)
	}
	// A disabled user with the right password: refused, failures kept.
	if err := login("dan", "right-pass"); !errors.Is(err, domain.ErrUserDisabled) {
		t.Fatalf("disabled: %v", err)
	}
	if got := r.take(); !slices.Equal(got, []string{"allow dan"}) {
		t.Fatalf("disabled login calls %v", got)
	}
	// Success: the failures clear, the replaced token's sessions close.
	tok, err := s.Login(ctx, "ip", LoginRequest{UserID: "ann", Password: "right-pass", PlatformID: 5})
	if err != nil || tok.Token == "" || tok.ExpireAt != 1000 {
		t.Fatalf("login %+v, %v", tok, err)
	}
	if got, want := r.take(), []string{"allow ann", "succeeded ann", "ann/5/old"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	// A refused attempt hashes nothing.
	r.refuse = domain.ErrRateLimited
	if err := login("ann", "right-pass"); !errors.Is(err, domain.ErrRateLimited) || p.checks != 4 {
		t.Fatalf("refused login: %v after %d checks", err, p.checks)
	}
}

func TestChangePasswordClosesOtherSessions(t *testing.T) {
	r := &recorder{}
	s := newTestService(map[string]domain.User{"pat": {ID: "pat", PasswordHash: "h:old-secret-1"}}, r)
	caller := Caller{UserID: "pat", PlatformID: 5, JTI: "mine"}
	req := PasswordRequest{OldPassword: "old-secret-1", NewPassword: "new-secret-2"}
	if _, err := s.ChangePassword(context.Background(), caller, PasswordRequest{OldPassword: "wrong", NewPassword: "x"}); !errors.Is(err, domain.ErrBadCredentials) {
		t.Fatalf("wrong old password: %v", err)
	}
	res, err := s.ChangePassword(context.Background(), caller, req)
	if err != nil || res.Revoked != 2 {
		t.Fatalf("change: %+v, %v", res, err)
	}
	// Every other platform, whatever the token; on the caller's only the
	// revoked Nexo token.
	want := []string{"pat/1/", "pat/2/", "pat/3/", "pat/4/", "pat/6/", "pat/7/", "pat/8/", "pat/9/", "pat/10/", "pat/5/j5"}
	if got := r.take(); !slices.Equal(got, want) {
		t.Fatalf("disconnects %v, want %v", got, want)
	}
	if _, err := s.Login(context.Background(), "ip", LoginRequest{UserID: "pat", Password: "new-secret-2", PlatformID: 1}); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
}

func TestRegistration(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	s := newTestService(map[string]domain.User{}, r)
	res, err := s.Register(ctx, "ip", RegisterRequest{Nickname: "n", Password: "plum-tart-9"})
	if err != nil || len(res.UserID) != 36 {
		t.Fatalf("register without an id: %+v, %v", res, err)
	}
	if _, err := s.Register(ctx, "ip", RegisterRequest{UserID: res.UserID, Nickname: "n", Password: "plum-tart-9"}); !errors.Is(err, domain.ErrUserExists) {
		t.Fatalf("taken id: %v", err)
	}
	s.closed = true
	if _, err := s.Register(ctx, "ip", RegisterRequest{UserID: "x", Nickname: "n", Password: "plum-tart-9"}); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("closed registration: %v", err)
	}
}

func TestHashGateRefusesWhenFull(t *testing.T) {
	g := newHashGate(configs.Auth{HashConcurrency: 1, HashWait: 10 * time.Millisecond})
	held, release := make(chan struct{}), make(chan struct{})
	go func() { _ = g.do(context.Background(), func() error { close(held); <-release; return nil }) }()
	<-held
	err := g.do(context.Background(), func() error { return nil })
	close(release)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.ErrServerBusy || de.RetryAfter != time.Second {
		t.Fatalf("full gate: %v, want server busy with a retry after 1s", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newHashGate(configs.Auth{HashConcurrency: 1}).do(ctx, func() error { return nil }); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestSetDisabledRefusesTokensFirst(t *testing.T) {
	r := &recorder{}
	s := newTestService(map[string]domain.User{"eve": {ID: "eve"}}, r)
	u, err := s.SetDisabled(context.Background(), "eve", true)
	if err != nil || !u.Disabled {
		t.Fatalf("disable: %+v, %v", u, err)
	}
	if got := r.take(); !slices.Equal(got, []string{"eve/0/"}) {
		t.Fatalf("disconnects %v", got)
	}
	s.store = fakeStore{err: errors.New("redis down")}
	if _, err := s.SetDisabled(context.Background(), "eve", true); !errors.Is(err, domain.ErrServerBusy) {
		t.Fatalf("token store down: %v, want server busy", err)
	}
	if got := r.take(); len(got) != 0 {
		t.Fatalf("sessions closed although the tokens were not refused: %v", got)
	}
}
