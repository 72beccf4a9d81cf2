package push

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Provider sends one notification to one device. It returns nil when the
// provider took it, else a *SendError saying whether the token is gone,
// whether a retry may succeed and when.
type Provider interface {
	Send(ctx context.Context, d deviceRef, n Notification) error
}

// SendError is a provider's refusal.
type SendError struct {
	// Reason is the metric label: gone, rate_limited, unavailable,
	// rejected, auth, network.
	Reason string
	// Status is the HTTP status (0: no answer).
	Status int
	// Gone: the token or subscription no longer exists (FCM UNREGISTERED,
	// APNs 410, Web Push 404/410): the device is forgotten.
	Gone bool
	// Retryable: a later attempt may succeed (429, 5xx, network).
	Retryable bool
	// RetryAfter is the provider's Retry-After, 0 when it sent none.
	RetryAfter time.Duration
	Detail     string
}

func (e *SendError) Error() string {
	return fmt.Sprintf("push %s (status %d): %s", e.Reason, e.Status, e.Detail)
}

// httpError classifies an HTTP answer that is not a success; gone is the
// provider's own reading of the body.
func httpError(status int, h http.Header, gone bool, detail string) *SendError {
	e := &SendError{Status: status, Detail: detail, RetryAfter: retryAfter(h)}
	switch {
	case gone:
		e.Reason, e.Gone = "gone", true
	case status == http.StatusTooManyRequests:
		e.Reason, e.Retryable = "rate_limited", true
	case status >= 500:
		e.Reason, e.Retryable = "unavailable", true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// Our credentials (expired token, key revoked): retried, so a fixed
		// configuration delivers what waited.
		e.Reason, e.Retryable = "auth", true
	default:
		e.Reason = "rejected"
	}
	return e
}

// networkError is a request that got no answer.
func networkError(err error) *SendError {
	return &SendError{Reason: "network", Retryable: true, Detail: err.Error()}
}

// retryAfter reads Retry-After: seconds or an HTTP date; 0 when absent.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// collapseID is a short stable ID of a conversation for the providers'
// collapse keys (APNs: at most 64 bytes; Web Push Topic: at most 32
// base64url characters).
func collapseID(conversationID string) string {
	h := sha256.Sum256([]byte(conversationID))
	return base64.RawURLEncoding.EncodeToString(h[:24])
}
