package domain

import "errors"

// Quote is the snapshot a quoted reply carries of the message it answers,
// taken when the reply is accepted: later edits do not change it, and a
// later recall or delete of the quoted message shows as Unavailable (set
// when the reply is read, never stored).
type Quote struct {
	Seq         int64
	SenderID    string
	MsgType     MsgType
	Preview     string
	Unavailable bool
}

// Refusals of message actions (docs/actions.md).
var (
	// ErrEditNotAllowed: not the sender, not a text message, or a
	// notification.
	ErrEditNotAllowed = errors.New("not allowed to edit this message")
	// ErrEditTimeout: msg.edit_window has passed.
	ErrEditTimeout = errors.New("edit window has passed")
	// ErrDeleteNotAllowed: delete for everyone by someone who is neither
	// the sender nor a group owner or admin, or of a notification.
	ErrDeleteNotAllowed = errors.New("not allowed to delete this message for everyone")
	// ErrMessageGone: the message was recalled or deleted; it can no
	// longer be edited or reacted to.
	ErrMessageGone = errors.New("message was recalled or deleted")
	// ErrBadEmoji: a reaction that is not one grapheme cluster of the
	// allowed set.
	ErrBadEmoji = errors.New("bad emoji")
	// ErrTooManyReactions: the caller already has msg.max_reactions_per_user
	// reactions on the message.
	ErrTooManyReactions = errors.New("too many reactions")
	// ErrQuoteUnavailable: the quoted seq holds no message the caller may
	// see (never sent, outside its visibility, recalled or deleted).
	ErrQuoteUnavailable = errors.New("quoted message unavailable")
)
