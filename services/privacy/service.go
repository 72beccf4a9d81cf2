// Package privacy holds a user's data rights and the server's retention:
// account deletion (erasure with the user_id kept reserved), the export of
// a user's data, per-conversation and server-wide retention with the
// cleaner that enforces it, and clearing a conversation's history for one
// user. docs/privacy.md describes each rule.
//
// It works behind small interfaces: the account and token stores, the
// session registry, the group service (whose ordinary transfer, quit and
// dismiss paths notify the members), the push devices, the object reader
// of ZIP exports (media.Service), and the privacy store
// (store.PrivacyRepo).
package privacy

import (
	"context"
	"log/slog"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/store"
)

// Users reads accounts (store.UserRepo).
type Users interface {
	Get(ctx context.Context, id string) (domain.User, error)
}

// Passwords checks a password against its hash (auth.Passwords):
// domain.ErrBadCredentials on a mismatch.
type Passwords interface {
	Check(hash, password string) error
}

// Tokens refuses a user's tokens on every instance at once (store.Tokens):
// SetDisabled(true) deletes every Nexo token record and refuses every
// app-signed token from now on, for good.
type Tokens interface {
	SetDisabled(ctx context.Context, userID string, disabled bool) error
}

// Sessions closes live sessions on every instance (as account.Sessions):
// Disconnect(userID, 0, "") ends all of the user's connections.
type Sessions interface {
	Disconnect(userID string, platformID int, jti string)
}

// Groups is the group service's part in a deletion and an export
// (group.Service).
type Groups interface {
	LeaveAll(ctx context.Context, userID string) (group.LeftGroups, error)
	List(ctx context.Context, caller, cursor string, limit int) (group.GroupList, error)
}

// Devices removes a deleted user's push devices (device tokens and their
// registrations). The push service implements it; nil while push devices
// do not exist. It must be idempotent: a deletion cut short runs it again.
type Devices interface {
	RemoveUserDevices(ctx context.Context, userID string) error
}

// ObjectEraser deletes the objects of a user that no message carries
// (media.Service.EraseOwner): avatars, uploads never sent. It returns how
// many it deleted.
type ObjectEraser interface {
	EraseOwner(ctx context.Context, owner string) (int, error)
}

// KeyEraser deletes the Redis keys that hold a user's state besides their
// tokens (store.UserKeys): presence records, last-seen, resend cursors.
type KeyEraser interface {
	EraseUserKeys(ctx context.Context, userID string) error
}

// Store is the privacy storage (store.PrivacyRepo).
type Store interface {
	EraseUser(ctx context.Context, userID string, opt store.EraseOptions) error
	Reserved(ctx context.Context, id string) (bool, error)
	ExportConversations(ctx context.Context, userID string) ([]store.ExportConversation, error)
	ExportPage(ctx context.Context, conversationID string, after, upto int64, limit int) ([]domain.Message, error)
	SetRetention(ctx context.Context, conversationID string, maxAgeMs int64, by string) error
	Retention(ctx context.Context, conversationID string) (int64, error)
	Retentions(ctx context.Context) (map[string]int64, error)
	DeleteExpired(ctx context.Context, conversationID string, skip []string, beforeMs int64, max int) (int, error)
	Clear(ctx context.Context, ownerID, conversationID string, seq int64) error
	ClearedSeq(ctx context.Context, ownerID, conversationID string) (int64, error)
}

// Cursors moves delivered and read cursors forward only
// (store.CursorRepo.Advance).
type Cursors interface {
	Advance(ctx context.Context, cursors []domain.Cursor) (int, error)
}

// Attempts counts password attempts as logins do (limits.Accounts): a
// deletion's password check is refused while the client or the account is
// backing off, and a wrong password counts as a failed login.
type Attempts interface {
	AllowLogin(ctx context.Context, ip, userID string) error
	LoginFailed(ctx context.Context, ip, userID string)
}

// Forgetter drops cached decisions about a user (account.DMGate).
type Forgetter interface {
	Forget(userID string)
}

// Config is the part of the configuration the service reads.
type Config struct {
	// MaxAge is retention.max_age: messages older than this are deleted
	// (0: kept forever, unless a conversation sets its own).
	MaxAge time.Duration
	// EraseDeletedUsers is retention.erase_deleted_users: a deleted
	// account's messages are deleted too, instead of kept under the
	// reserved user_id.
	EraseDeletedUsers bool
}

// Deps are the service's collaborators. Devices, Keys, Gate, Attempts,
// Cursors, Roles, Media and Objects may be nil; the others are required.
type Deps struct {
	Config    Config
	Users     Users
	Passwords Passwords
	Tokens    Tokens
	Sessions  Sessions
	Groups    Groups
	Devices   Devices
	Keys      KeyEraser
	Gate      Forgetter
	Attempts  Attempts
	Store     Store
	// Access decides who may read, clear and set the retention of a
	// conversation (ConversationAccess).
	Access ConversationAccess
	// Cursors moves a user's delivered_seq past a cleared history
	// (store.CursorRepo), so the resend on connect does not push it
	// again; nil leaves the cursors alone.
	Cursors Cursors
	// Roles tells a group member's role, for a group's retention.
	Roles Roles
	// Media reads the objects a ZIP export carries (media.Service); nil
	// when uploads are off: the archive then holds export.json alone.
	Media Media
	// Objects erases a deleted user's own objects that no message carries
	// (media.Service); nil when uploads are off.
	Objects ObjectEraser
	Log     *slog.Logger
}

// Service applies the rules of deletion, export, retention and clearing.
type Service struct {
	d Deps
}

// NewService returns the service on d.
func NewService(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Service{d: d}
}
