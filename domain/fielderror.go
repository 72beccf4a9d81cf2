package domain

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// Error is a sentinel (Kind) with the detail its author wants the client to
// read. The gateway answers it with Kind's reason and err_code and Detail as
// the message, for every kind, server-side ones included: unlike the text of
// an arbitrary wrapped error, a Detail is written for clients.
// RetryAfter, when > 0 (ErrRateLimited), says when a retry may succeed.
type Error struct {
	Kind       error
	Detail     string
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ": " + e.Detail
}

// Unwrap makes errors.Is(err, e.Kind) hold.
func (e *Error) Unwrap() error { return e.Kind }

// NewError returns kind with a client-facing detail.
func NewError(kind error, detail string) *Error { return &Error{Kind: kind, Detail: detail} }

// BadField returns ErrInvalidArgument whose detail is "<field> <message>",
// the one shape every field error has on both APIs (a field is named as a
// dotted path: content.text, seqs.3; "body" is the whole request).
func BadField(field, format string, args ...any) *Error {
	return &Error{Kind: ErrInvalidArgument, Detail: field + " " + fmt.Sprintf(format, args...)}
}

// CheckLen checks that v is valid UTF-8 of min..max characters (Unicode
// code points, as VARCHAR counts them); min 1 makes the field required.
// Errors are BadField: "must be valid UTF-8", "is required" or
// "must be min–max characters (got n)".
func CheckLen(field, v string, min, max int) error {
	if !utf8.ValidString(v) {
		return BadField(field, "must be valid UTF-8")
	}
	n := utf8.RuneCountInString(v)
	switch {
	case n == 0 && min > 0:
		return BadField(field, "is required")
	case n < min || n > max:
		return BadField(field, "must be %d–%d characters (got %d)", min, max, n)
	}
	return nil
}

// CheckID checks a user or group ID field: required, and 1–MaxIDLen
// characters of A-Z a-z 0-9 _ - (ValidID).
func CheckID(field, id string) error {
	if id == "" {
		return BadField(field, "is required")
	}
	if !ValidID(id) {
		return BadField(field, "must be 1–%d characters of A-Z a-z 0-9 _ -", MaxIDLen)
	}
	return nil
}

// CheckIDs checks every ID of a list field with ValidID.
func CheckIDs(field string, ids []string) error {
	for _, id := range ids {
		if !ValidID(id) {
			return BadField(field, "%q is not a user ID (1–%d characters of A-Z a-z 0-9 _ -)", id, MaxIDLen)
		}
	}
	return nil
}
