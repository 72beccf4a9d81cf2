// Package push is the built-in push to phones and browsers (docs/push.md):
// the devices users register, the stages that turn saved messages into
// notifications for recipients with no foreground connection, and the
// providers that send them (FCM HTTP v1, APNs, Web Push).
package push

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"net/url"
	"strings"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Providers (the provider field of a device).
const (
	ProviderFCM     = "fcm"
	ProviderAPNs    = "apns"
	ProviderWebPush = "webpush"
)

// Providers lists every provider, in a stable order.
var Providers = []string{ProviderFCM, ProviderAPNs, ProviderWebPush}

// maxTokenBytes bounds an FCM/APNs token and a Web Push endpoint.
const maxTokenBytes = 4096

// DeviceStore keeps devices (store.PushDeviceRepo).
type DeviceStore interface {
	Register(ctx context.Context, d store.PushDevice, maxPerUser int) (store.PushDevice, error)
	List(ctx context.Context, userID string) ([]store.PushDevice, error)
	Delete(ctx context.Context, userID, id string) error
	DeletePlatform(ctx context.Context, userID string, platformID int) (int64, error)
	SetMentionsOnly(ctx context.Context, userID, conversationID string, on bool) error
	MentionsOnlyOf(ctx context.Context, userID string) ([]string, error)
}

// SettingsRequest is POST /push/settings: a group conversation notifies
// only the messages that mention the caller (or everyone) when
// mentions_only is true.
type SettingsRequest struct {
	ConversationID string `json:"conversation_id"`
	MentionsOnly   bool   `json:"mentions_only"`
}

// Validate: conversation_id must be a group conversation.
func (r *SettingsRequest) Validate() error {
	if domain.GroupIDOf(r.ConversationID) == "" {
		return domain.BadField("conversation_id", "must be a group conversation ID (sg_<group_id>)")
	}
	return nil
}

// SettingsJSON is GET /push/settings: the caller's mentions-only group
// conversations.
type SettingsJSON struct {
	MentionsOnly []string `json:"mentions_only"`
}

// RegisterRequest is POST /push/devices: token for fcm and apns,
// subscription for webpush.
type RegisterRequest struct {
	Provider     string            `json:"provider"`
	Token        string            `json:"token"`
	Subscription *SubscriptionJSON `json:"subscription"`
	PlatformID   int               `json:"platform_id"`
	AppID        string            `json:"app_id"`
	Locale       string            `json:"locale"`
}

// SubscriptionJSON is a browser's PushSubscription.toJSON() (less
// expirationTime, which is accepted and ignored).
type SubscriptionJSON struct {
	Endpoint       string   `json:"endpoint"`
	ExpirationTime *float64 `json:"expirationTime,omitempty"`
	Keys           KeysJSON `json:"keys"`
}

// KeysJSON are a subscription's keys, base64url: p256dh the user agent's
// P-256 public key (65 bytes uncompressed), auth its 16-byte secret.
type KeysJSON struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

// DeviceJSON is a device as GET /push/devices shows it; Token is the
// token, or the endpoint of a Web Push subscription.
type DeviceJSON struct {
	DeviceID   string `json:"device_id"`
	Provider   string `json:"provider"`
	Token      string `json:"token"`
	PlatformID int    `json:"platform_id"`
	AppID      string `json:"app_id"`
	Locale     string `json:"locale"`
	CreatedAt  int64  `json:"created_at"`
	UpdatedAt  int64  `json:"updated_at"`
}

// DevicesJSON is GET /push/devices.
type DevicesJSON struct {
	Devices []DeviceJSON `json:"devices"`
}

// DeleteRequest is DELETE /push/devices/{id}.
type DeleteRequest struct {
	DeviceID string
}

// Validate checks what needs no configuration: the provider's name, the
// platform and the optional fields' lengths. Tokens and subscriptions are
// checked by Service.Register (the insecure-endpoint switch is config).
func (r *RegisterRequest) Validate() error {
	switch r.Provider {
	case ProviderFCM, ProviderAPNs, ProviderWebPush:
	default:
		return domain.NewError(domain.ErrPushProviderUnavailable, "provider must be fcm, apns or webpush")
	}
	if !domain.Platform(r.PlatformID).Valid() {
		return domain.BadField("platform_id", "must be an OpenIM platform number 1–10")
	}
	if err := domain.CheckLen("app_id", r.AppID, 0, 128); err != nil {
		return err
	}
	return domain.CheckLen("locale", r.Locale, 0, 35)
}

// Service manages devices: registration, listing and removal (owner
// only), removal at logout and account deletion.
type Service struct {
	devices DeviceStore
	cfg     configs.Push
	enabled map[string]bool
	vapid   string
}

// NewService returns the device service; enabled names the configured
// providers; vapidPublic is the VAPID public key (base64url) or "".
func NewService(devices DeviceStore, cfg configs.Push, enabled map[string]bool, vapidPublic string) *Service {
	return &Service{devices: devices, cfg: cfg, enabled: enabled, vapid: vapidPublic}
}

// VAPIDKeyJSON is GET /push/vapid_public_key.
type VAPIDKeyJSON struct {
	Key string `json:"key"`
}

// VAPIDPublicKey returns the application server key browsers subscribe
// with: domain.ErrPushProviderUnavailable when Web Push is off.
func (s *Service) VAPIDPublicKey() (VAPIDKeyJSON, error) {
	if !s.enabled[ProviderWebPush] || s.vapid == "" {
		return VAPIDKeyJSON{}, domain.NewError(domain.ErrPushProviderUnavailable, "web push is not configured on this server")
	}
	return VAPIDKeyJSON{Key: s.vapid}, nil
}

// Register stores the caller's device (re-registering a token keeps its
// device_id and moves it to the caller). Errors: push_provider_unavailable,
// push_token_invalid, push_endpoint_insecure, push_subscription_invalid,
// bad_request.
func (s *Service) Register(ctx context.Context, userID string, req RegisterRequest) (DeviceJSON, error) {
	if err := req.Validate(); err != nil {
		return DeviceJSON{}, err
	}
	d := store.PushDevice{UserID: userID, Provider: req.Provider, PlatformID: req.PlatformID, AppID: req.AppID, Locale: req.Locale}
	switch req.Provider {
	case ProviderWebPush:
		if req.Token != "" {
			return DeviceJSON{}, domain.BadField("token", "is for fcm and apns; webpush takes subscription")
		}
		if err := s.checkSubscription(req.Subscription); err != nil {
			return DeviceJSON{}, err
		}
		d.Token, d.P256dh, d.Auth = req.Subscription.Endpoint, req.Subscription.Keys.P256dh, req.Subscription.Keys.Auth
	default:
		if req.Subscription != nil {
			return DeviceJSON{}, domain.BadField("subscription", "is for webpush; %s takes token", req.Provider)
		}
		if err := checkToken(req.Provider, req.Token); err != nil {
			return DeviceJSON{}, err
		}
		d.Token = req.Token
	}
	// Checked after the shape, so a malformed registration is told what is
	// wrong with it whatever this server's configuration.
	if !s.enabled[req.Provider] {
		return DeviceJSON{}, domain.NewError(domain.ErrPushProviderUnavailable, req.Provider+" is not configured on this server")
	}
	out, err := s.devices.Register(ctx, d, s.cfg.MaxDevicesPerUser)
	if err != nil {
		return DeviceJSON{}, err
	}
	return deviceJSON(out), nil
}

// List returns the caller's devices.
func (s *Service) List(ctx context.Context, userID string) (DevicesJSON, error) {
	ds, err := s.devices.List(ctx, userID)
	if err != nil {
		return DevicesJSON{}, err
	}
	out := DevicesJSON{Devices: make([]DeviceJSON, len(ds))}
	for i, d := range ds {
		out.Devices[i] = deviceJSON(d)
	}
	return out, nil
}

// Delete removes the caller's device: push_device_not_found when the
// caller has none with that ID (another user's is not found either).
func (s *Service) Delete(ctx context.Context, userID string, req DeleteRequest) (struct{}, error) {
	if req.DeviceID == "" || len(req.DeviceID) > 64 {
		return struct{}{}, domain.NewError(domain.ErrPushDeviceNotFound, "no such device")
	}
	if err := s.devices.Delete(ctx, userID, req.DeviceID); err != nil {
		return struct{}{}, err
	}
	return struct{}{}, nil
}

// SetSettings turns the caller's mentions-only push of a group
// conversation on or off, and answers the caller's settings.
func (s *Service) SetSettings(ctx context.Context, userID string, req SettingsRequest) (SettingsJSON, error) {
	if err := req.Validate(); err != nil {
		return SettingsJSON{}, err
	}
	if err := s.devices.SetMentionsOnly(ctx, userID, req.ConversationID, req.MentionsOnly); err != nil {
		return SettingsJSON{}, err
	}
	return s.Settings(ctx, userID)
}

// Settings returns the caller's push settings.
func (s *Service) Settings(ctx context.Context, userID string) (SettingsJSON, error) {
	ids, err := s.devices.MentionsOnlyOf(ctx, userID)
	if err != nil {
		return SettingsJSON{}, err
	}
	if ids == nil {
		ids = []string{}
	}
	return SettingsJSON{MentionsOnly: ids}, nil
}

// LoggedOut forgets userID's devices registered from platformID: a
// logged-out app must not be woken for that user. The account service
// calls it at logout.
func (s *Service) LoggedOut(ctx context.Context, userID string, platformID int) error {
	if platformID == 0 {
		return nil
	}
	_, err := s.devices.DeletePlatform(ctx, userID, platformID)
	return err
}

// ForgetUser forgets every device of userID (account deletion).
func (s *Service) ForgetUser(ctx context.Context, userID string) error {
	_, err := s.devices.DeletePlatform(ctx, userID, 0)
	return err
}

func deviceJSON(d store.PushDevice) DeviceJSON {
	return DeviceJSON{DeviceID: d.ID, Provider: d.Provider, Token: d.Token, PlatformID: d.PlatformID, AppID: d.AppID,
		Locale: d.Locale, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

// checkToken: an FCM token is 1–4096 bytes of [A-Za-z0-9_:.-]; an APNs
// token hex digits (Apple documents no fixed length; 64 today).
func checkToken(provider, t string) error {
	if t == "" {
		return domain.NewError(domain.ErrPushTokenInvalid, "token is required for "+provider)
	}
	if len(t) > maxTokenBytes {
		return domain.NewError(domain.ErrPushTokenInvalid, "token must be at most 4096 bytes")
	}
	for _, c := range t {
		ok := c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		if provider == ProviderFCM {
			ok = ok || c >= 'g' && c <= 'z' || c >= 'G' && c <= 'Z' || c == '_' || c == ':' || c == '-' || c == '.'
		}
		if !ok {
			if provider == ProviderAPNs {
				return domain.NewError(domain.ErrPushTokenInvalid, "an APNs token is hexadecimal")
			}
			return domain.NewError(domain.ErrPushTokenInvalid, "an FCM token holds only letters, digits and _ : - .")
		}
	}
	if provider == ProviderAPNs && len(t)%2 != 0 {
		return domain.NewError(domain.ErrPushTokenInvalid, "an APNs token is an even number of hex digits")
	}
	return nil
}

// checkSubscription: an https endpoint URL (http only with
// push.webpush.allow_insecure_endpoints), a P-256 point and a 16-byte
// auth secret.
func (s *Service) checkSubscription(sub *SubscriptionJSON) error {
	if sub == nil {
		return domain.NewError(domain.ErrPushSubscriptionInvalid, "subscription {endpoint, keys{p256dh, auth}} is required for webpush")
	}
	if sub.Endpoint == "" || len(sub.Endpoint) > maxTokenBytes {
		return domain.NewError(domain.ErrPushSubscriptionInvalid, "subscription.endpoint must be a URL of at most 4096 bytes")
	}
	u, err := url.Parse(sub.Endpoint)
	if err != nil || u.Host == "" || u.User != nil {
		return domain.NewError(domain.ErrPushSubscriptionInvalid, "subscription.endpoint is not an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && s.cfg.WebPush.AllowInsecureEndpoints:
	default:
		return domain.NewError(domain.ErrPushEndpointInsecure, "subscription.endpoint must be an https:// URL")
	}
	pub, err := decodeB64URL(sub.Keys.P256dh)
	if err != nil || len(pub) != 65 {
		return domain.NewError(domain.ErrPushSubscriptionInvalid, "subscription.keys.p256dh must be a base64url P-256 public key (65 bytes)")
	}
	if _, err := ecdh.P256().NewPublicKey(pub); err != nil {
		return domain.NewError(domain.ErrPushSubscriptionInvalid, "subscription.keys.p256dh is not a point on P-256")
	}
	if a, err := decodeB64URL(sub.Keys.Auth); err != nil || len(a) != 16 {
		return domain.NewError(domain.ErrPushSubscriptionInvalid, "subscription.keys.auth must be a base64url 16-byte secret")
	}
	return nil
}

// decodeB64URL accepts base64url with or without padding (browsers send
// it without; some libraries pad).
func decodeB64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
