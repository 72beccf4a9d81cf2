package domain

import "errors"

// Sentinel errors. Every package returns these (wrapped with context) and the
// gateway maps each to exactly one wire reason and code (gateway/errors.go).
var (
	// ErrInvalidArgument: a field is missing, malformed or out of range.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrBodyTooLong: a message body exceeds the configured limit.
	ErrBodyTooLong = errors.New("body too long")
	// ErrNotFound: a generic missing row; repositories prefer the specific ones below.
	ErrNotFound = errors.New("not found")
	// ErrUserNotFound: no such user.
	ErrUserNotFound = errors.New("user not found")
	// ErrUserDisabled: the app disabled the user (server API).
	ErrUserDisabled = errors.New("user disabled")
	// ErrMessageRejected: the app's before_send webhook refused the message.
	ErrMessageRejected = errors.New("message rejected")
	// ErrBlocked: the other user does not accept this from the caller —
	// they blocked the caller, or their dm_policy or group_invites refuses
	// them; one answer for all, so a block is not revealed.
	ErrBlocked = errors.New("blocked")
	// ErrBlockedWord: the text holds a word of the operator's word filter
	// (moderation.blocked_words with moderation.action refuse).
	ErrBlockedWord = errors.New("blocked word")
	// ErrReportNotFound: no message report has this id.
	ErrReportNotFound = errors.New("report not found")
	// ErrUserExists: the user_id is taken.
	ErrUserExists = errors.New("user already exists")
	// ErrDuplicate: a unique key rejected a row (MySQL 1062, SQLite UNIQUE).
	ErrDuplicate = errors.New("duplicate key")
	// ErrBadCredentials: unknown user or wrong password (deliberately the same).
	ErrBadCredentials = errors.New("bad credentials")

	// ErrTokenMissing, ErrTokenInvalid, ErrTokenExpired, ErrTokenRevoked: auth failures.
	ErrTokenMissing = errors.New("token missing")
	ErrTokenInvalid = errors.New("token invalid")
	ErrTokenExpired = errors.New("token expired")
	ErrTokenRevoked = errors.New("token revoked")

	// ErrForbidden: the caller may not do this.
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited: the caller is over its rate limit.
	ErrRateLimited = errors.New("too many requests")
	// ErrServerBusy: a dependency is down and the configuration says refuse.
	ErrServerBusy = errors.New("server busy")

	// ErrNotConversationMember: the caller is not a party/member of the conversation.
	ErrNotConversationMember = errors.New("not a conversation member")
	// ErrBadSeq: a seq is out of the conversation's range.
	ErrBadSeq = errors.New("bad seq")

	// ErrGroupNotFound: no such group.
	ErrGroupNotFound = errors.New("group not found")
	// ErrNotGroupMember: the caller has never been a member of the group.
	ErrNotGroupMember = errors.New("not a group member")
	// ErrMemberNotActive: the caller quit or was kicked.
	ErrMemberNotActive = errors.New("group member not active")
	// ErrGroupDismissed: the group no longer accepts messages.
	ErrGroupDismissed = errors.New("group dismissed")
)

// Group administration and recall refusals (see docs/groups.md, docs/protocol.md).
var (
	ErrJoinNotAllowed   = errors.New("group does not allow joining")
	ErrOwnerCannotQuit  = errors.New("owner must transfer ownership before quitting")
	ErrRevokeNotAllowed = errors.New("not allowed to revoke this message")
	ErrRevokeTimeout    = errors.New("revoke window has passed")
	ErrMessageNotFound  = errors.New("message not found")
	ErrSaveFailed       = errors.New("message could not be saved")
	// ErrSearchTimeout: a search ran past search.timeout.
	ErrSearchTimeout = errors.New("search timed out")
)
