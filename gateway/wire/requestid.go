package wire

import (
	"context"
	"crypto/rand"
	"encoding/base32"
)

// RequestIDHeader is the HTTP header that carries a request's id, in the
// request (from a proxy that already assigned one) and in every response.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// WithRequestID returns ctx carrying request id id; the HTTP middleware
// puts it on every request's context (gateway.Server).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id ctx carries, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewRequestID returns a fresh request id: 16 random characters of
// A–Z2–7 (80 bits).
func NewRequestID() string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return idEncoding.EncodeToString(b[:])
}

// ValidRequestID reports whether an id sent by a client or proxy may be
// adopted: 1–64 characters of A–Z a–z 0–9 . _ - (so it cannot forge log
// lines or headers).
func ValidRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
