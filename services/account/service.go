// Package account holds the rules of user accounts: registration, login
// and its abuse limits, token refresh and logout, password changes,
// profiles, and the server API's management of users (create, disable,
// delete, issue and revoke their tokens).
//
// It works in domain terms behind small interfaces: the user store, the
// password hasher, the token issuer (gateway/auth), the token store and
// the session registry, so the gateway's routes (user routes and the
// server API alike) only bind requests and write answers.
package account

import (
	"context"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Users is the user store (store.UserRepo). Create returns
// domain.ErrUserExists for a taken ID; the others return
// domain.ErrUserNotFound for an unknown one.
type Users interface {
	Create(ctx context.Context, u domain.User) (domain.User, error)
	Get(ctx context.Context, id string) (domain.User, error)
	Update(ctx context.Context, id string, u store.UserUpdate) (domain.User, error)
	SetPassword(ctx context.Context, id, hash string) error
	SetDisabled(ctx context.Context, id string, disabled bool) (domain.User, error)
	Delete(ctx context.Context, id string) error
}

// Passwords hashes and checks passwords (auth.Passwords). Check returns
// domain.ErrBadCredentials on a mismatch, and for an empty hash (an unknown
// user) after spending the time a real check takes.
type Passwords interface {
	Hash(password string) (string, error)
	Check(hash, password string) error
}

// Caller is the signed-in user a request comes from, as its token says.
type Caller struct {
	UserID     string
	PlatformID int
	// JTI identifies the caller's token.
	JTI string
}

// IssuedToken is an access token just issued and its expiry.
type IssuedToken struct {
	Token     string
	ExpiresAt time.Time
	// Replaced is the jti of the token this one replaced as its user's
	// active token on the platform ("" if none): its sessions must close.
	Replaced string
}

// Tokens issues and revokes access tokens (auth.AccountTokens over the
// Issuer).
type Tokens interface {
	// Issue signs a token for userID on platformID that replaces the
	// previous one of that user and platform.
	Issue(ctx context.Context, userID string, platformID int) (IssuedToken, error)
	// Refresh replaces c's token by a new one; domain.ErrTokenRevoked when
	// c's token is no longer the active one.
	Refresh(ctx context.Context, c Caller) (IssuedToken, error)
	// Revoke revokes c's token.
	Revoke(ctx context.Context, c Caller) error
	// RevokeAll revokes every token of userID except keep's (the zero
	// Caller keeps none) and returns the revoked jti per platform, also
	// along with an error.
	RevokeAll(ctx context.Context, userID string, keep Caller) (map[int]string, error)
}

// TokenStore refuses a user's tokens on every instance at once
// (store.Tokens).
type TokenStore interface {
	RevokeUser(ctx context.Context, userID string) error
	SetDisabled(ctx context.Context, userID string, disabled bool) error
}

// Sessions closes live sessions: Disconnect ends userID's connections on
// platformID (0: all) opened with token jti ("": any), with 3001
// session_invalid, on every instance. Token refusal does not wait for it:
// the token store already refuses them everywhere. It must not block for
// long.
type Sessions interface {
	Disconnect(userID string, platformID int, jti string)
}

// Limits are the abuse limits on registration and login, shared by every
// instance (limits.Accounts). Refusals are too_many_requests errors with
// a retry-after.
type Limits interface {
	// AllowRegister counts one registration from client ip.
	AllowRegister(ctx context.Context, ip string) error
	// AllowLogin counts one login attempt from ip on userID, and refuses
	// while either is backing off after failures.
	AllowLogin(ctx context.Context, ip, userID string) error
	// LoginFailed counts a wrong password against ip and userID.
	LoginFailed(ctx context.Context, ip, userID string)
	// LoginSucceeded clears userID's failed attempts.
	LoginSucceeded(ctx context.Context, userID string)
}

// Contacts tells which users share a conversation or a group with a user
// (store.Contacts): only those may see each other's profile.
type Contacts interface {
	Shared(ctx context.Context, userID string, ids []string) (map[string]bool, error)
}

// WordFilter is the operator's word filter (moderation.Filter): the value
// unchanged, masked (moderation.action mask) or a domain.ErrBlockedWord
// error naming field (refuse).
type WordFilter interface {
	Check(field, s string) (string, error)
}

// Deps are the service's collaborators. Limits may be nil (no limits);
// Contacts nil shows nobody another user's profile; every other interface
// is required.
type Deps struct {
	Users    Users
	Contacts Contacts
	// Blocks stores blocks; Gate is the direct-message check whose cache
	// a block or a dm_policy change refreshes. Nil Blocks refuses the
	// block routes; nil Gate caches nothing.
	Blocks    Blocks
	Gate      *DMGate
	Passwords Passwords
	Tokens    Tokens
	Store     TokenStore
	Sessions  Sessions
	Limits    Limits
	// Auth sizes the password-hashing gate (auth.hash_concurrency,
	// auth.hash_wait).
	Auth configs.Auth
	// RegistrationClosed refuses Register (auth.registration).
	RegistrationClosed bool
	// Words, when set, filters the nickname a user chooses at Register and
	// Update; the server API's CreateUser and UpdateUser are exempt (the
	// app decides, docs/moderation.md).
	Words WordFilter
	// Devices forgets push devices at logout and account deletion; nil
	// when the built-in push is off.
	Devices Devices
}

// Devices are a user's push devices (push.Service): a logged-out app and a
// deleted account must not be woken any more.
type Devices interface {
	LoggedOut(ctx context.Context, userID string, platformID int) error
	ForgetUser(ctx context.Context, userID string) error
}

// Service applies the account rules.
type Service struct {
	users     Users
	contacts  Contacts
	blocks    Blocks
	gate      *DMGate
	passwords Passwords
	tokens    Tokens
	store     TokenStore
	sessions  Sessions
	limits    Limits
	hashes    *hashGate
	closed    bool
	devices   Devices
	words     WordFilter
}

// NewService returns the service on d.
func NewService(d Deps) *Service {
	return &Service{users: d.Users, contacts: d.Contacts, blocks: d.Blocks, gate: d.Gate, passwords: d.Passwords, tokens: d.Tokens, store: d.Store, sessions: d.Sessions,
		limits: d.Limits, hashes: newHashGate(d.Auth), closed: d.RegistrationClosed, words: d.Words, devices: d.Devices}
}

// filterNickname applies the word filter to *nickname (nil: not given).
func (s *Service) filterNickname(nickname *string) error {
	if s.words == nil || nickname == nil {
		return nil
	}
	v, err := s.words.Check("nickname", *nickname)
	if err != nil {
		return err
	}
	*nickname = v
	return nil
}

// checkPlatform is the rule of a platform_id: an OpenIM platform number.
func checkPlatform(field string, p int) error {
	if !domain.Platform(p).Valid() {
		return domain.BadField(field, "must be an OpenIM platform number 1–10 (1 iOS, 2 Android, 3 Windows, 4 macOS, 5 Web, 6 mini web, 7 Linux, 8 Android pad, 9 iPad, 10 admin)")
	}
	return nil
}

// checkProfile applies the rules of the profile fields given (nil: not
// given): lengths, a nickname required when given, group_invites one of
// its choices.
func checkProfile(nickname, avatar *string, groupInvites *domain.GroupInvites, dmPolicy *domain.DMPolicy) error {
	if nickname != nil {
		if err := domain.CheckLen("nickname", *nickname, 1, domain.MaxNicknameLen); err != nil {
			return err
		}
	}
	if avatar != nil {
		if err := domain.CheckLen("avatar", *avatar, 0, domain.MaxAvatarLen); err != nil {
			return err
		}
	}
	if groupInvites != nil && !groupInvites.Valid() {
		return domain.BadField("group_invites", "must be everyone, shared_groups or nobody")
	}
	if dmPolicy != nil && !dmPolicy.Valid() {
		return domain.BadField("dm_policy", "must be everyone, shared_groups or nobody")
	}
	return nil
}

// TokenJSON answers a login, a refresh and the server API's token route;
// expire_at is Unix milliseconds.
type TokenJSON struct {
	Token    string `json:"token"`
	ExpireAt int64  `json:"expire_at"`
}

func tokenJSON(t IssuedToken) TokenJSON {
	return TokenJSON{Token: t.Token, ExpireAt: t.ExpiresAt.UnixMilli()}
}

// issue gives u a token on platformID, refused for a disabled user; the
// live sessions of the token it replaces close.
func (s *Service) issue(ctx context.Context, u domain.User, platformID int) (TokenJSON, error) {
	if u.Disabled {
		return TokenJSON{}, domain.ErrUserDisabled
	}
	tok, err := s.tokens.Issue(ctx, u.ID, platformID)
	if err != nil {
		return TokenJSON{}, err
	}
	if tok.Replaced != "" {
		s.sessions.Disconnect(u.ID, platformID, tok.Replaced)
	}
	return tokenJSON(tok), nil
}
