package domain

import "errors"

// Push device errors (docs/push.md): a device registration the server
// cannot use, or a device that is not the caller's.
var (
	// ErrPushEndpointInsecure: a Web Push subscription endpoint is not an
	// https URL (push.webpush.allow_insecure_endpoints accepts http, for
	// tests).
	ErrPushEndpointInsecure = errors.New("push endpoint must be https")
	// ErrPushSubscriptionInvalid: a Web Push subscription's keys are not a
	// P-256 public key (65 bytes) and a 16-byte auth secret, base64url.
	ErrPushSubscriptionInvalid = errors.New("push subscription invalid")
	// ErrPushTokenInvalid: an FCM or APNs token is missing, too long or
	// not of the provider's alphabet.
	ErrPushTokenInvalid = errors.New("push token invalid")
	// ErrPushProviderUnavailable: the provider named is not configured on
	// this server.
	ErrPushProviderUnavailable = errors.New("push provider unavailable")
	// ErrPushDeviceNotFound: no such device of the caller.
	ErrPushDeviceNotFound = errors.New("push device not found")
)
