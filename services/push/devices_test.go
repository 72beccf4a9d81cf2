package push

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/domain"
)

// TestRegisterRefusesMalformedDevices: each malformed registration gets
// its own error; a valid one is listed; re-registering a token keeps its
// device_id and moves it to the new user.
func TestRegisterRefusesMalformedDevices(t *testing.T) {
	h := newHarness(t, testConfig())
	ctx := context.Background()
	good := h.web.subscribe(t, "x").json()
	strict := *h.svc
	strict.cfg.WebPush.AllowInsecureEndpoints = false
	for _, tc := range []struct {
		name string
		svc  *Service
		req  RegisterRequest
		want error
	}{
		{"http endpoint outside the test switch", &strict, RegisterRequest{Provider: "webpush", PlatformID: 5, Subscription: good}, domain.ErrPushEndpointInsecure},
		{"bad p256dh", h.svc, RegisterRequest{Provider: "webpush", PlatformID: 5, Subscription: &SubscriptionJSON{Endpoint: good.Endpoint,
			Keys: KeysJSON{P256dh: "AAAA", Auth: good.Keys.Auth}}}, domain.ErrPushSubscriptionInvalid},
		{"p256dh not on the curve", h.svc, RegisterRequest{Provider: "webpush", PlatformID: 5, Subscription: &SubscriptionJSON{Endpoint: good.Endpoint,
			Keys: KeysJSON{P256dh: "BA" + strings.Repeat("A", 85), Auth: good.Keys.Auth}}}, domain.ErrPushSubscriptionInvalid},
		{"short auth", h.svc, RegisterRequest{Provider: "webpush", PlatformID: 5, Subscription: &SubscriptionJSON{Endpoint: good.Endpoint,
			Keys: KeysJSON{P256dh: good.Keys.P256dh, Auth: "AAAA"}}}, domain.ErrPushSubscriptionInvalid},
		{"no subscription", h.svc, RegisterRequest{Provider: "webpush", PlatformID: 5}, domain.ErrPushSubscriptionInvalid},
		{"10 KiB token", h.svc, RegisterRequest{Provider: "fcm", PlatformID: 2, Token: strings.Repeat("a", 10<<10)}, domain.ErrPushTokenInvalid},
		{"APNs token not hex", h.svc, RegisterRequest{Provider: "apns", PlatformID: 1, Token: "zz11"}, domain.ErrPushTokenInvalid},
		{"empty token", h.svc, RegisterRequest{Provider: "fcm", PlatformID: 2}, domain.ErrPushTokenInvalid},
		{"unknown provider", h.svc, RegisterRequest{Provider: "gcm", PlatformID: 2, Token: "t"}, domain.ErrPushProviderUnavailable},
		{"bad platform", h.svc, RegisterRequest{Provider: "fcm", PlatformID: 99, Token: "t"}, domain.ErrInvalidArgument},
	} {
		_, err := tc.svc.Register(ctx, "bob", tc.req)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := h.svc.SetSettings(ctx, "bob", SettingsRequest{ConversationID: "si_alice_bob", MentionsOnly: true}); !errors.Is(err, domain.ErrInvalidArgument) {
		t.Errorf("mentions-only of a single chat: %v", err)
	}
	off := NewService(h.repo, h.cfg, map[string]bool{ProviderWebPush: true}, "k")
	if _, err := off.Register(ctx, "bob", RegisterRequest{Provider: "fcm", PlatformID: 2, Token: "t"}); !errors.Is(err, domain.ErrPushProviderUnavailable) {
		t.Errorf("unconfigured provider: %v", err)
	}

	first := h.tokenDevice("bob", ProviderFCM, "tok-1")
	again := h.tokenDevice("carol", ProviderFCM, "tok-1")
	if again.DeviceID != first.DeviceID {
		t.Errorf("re-registration made a new device %s (was %s)", again.DeviceID, first.DeviceID)
	}
	if l, _ := h.svc.List(ctx, "bob"); len(l.Devices) != 0 {
		t.Errorf("bob still lists the token carol registered: %+v", l)
	}
}

// TestDevicesAreTheOwnersOnly: another user can neither see nor delete a
// device; logout of a platform and account deletion forget devices.
func TestDevicesAreTheOwnersOnly(t *testing.T) {
	h := newHarness(t, testConfig())
	ctx := context.Background()
	d := h.webDevice("bob", "bob")
	ios := h.tokenDevice("bob", ProviderAPNs, "abcd")
	if l, _ := h.svc.List(ctx, "mallory"); len(l.Devices) != 0 {
		t.Fatalf("mallory lists %+v", l)
	}
	if _, err := h.svc.Delete(ctx, "mallory", DeleteRequest{DeviceID: d.DeviceID}); !errors.Is(err, domain.ErrPushDeviceNotFound) {
		t.Fatalf("mallory deleting bob's device: %v", err)
	}
	if l, _ := h.svc.List(ctx, "bob"); len(l.Devices) != 2 {
		t.Fatalf("bob lists %+v", l)
	}
	if err := h.svc.LoggedOut(ctx, "bob", 1); err != nil {
		t.Fatal(err)
	}
	l, _ := h.svc.List(ctx, "bob")
	if len(l.Devices) != 1 || l.Devices[0].DeviceID != d.DeviceID {
		t.Fatalf("after logout of iOS (%s): %+v", ios.DeviceID, l)
	}
	if _, err := h.svc.Delete(ctx, "bob", DeleteRequest{DeviceID: d.DeviceID}); err != nil {
		t.Fatal(err)
	}
	h.tokenDevice("bob", ProviderFCM, "f1")
	if err := h.svc.ForgetUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if l, _ := h.svc.List(ctx, "bob"); len(l.Devices) != 0 {
		t.Fatalf("after account deletion: %+v", l)
	}
}

// TestPreviewModes: text is cut to preview_chars, sender_only hides the
// text, none hides the sender too.
func TestPreviewModes(t *testing.T) {
	m := &savedMsg{MsgType: int(domain.MsgText), Text: "héllo wörld", SenderID: "alice"}
	for _, tc := range []struct {
		mode, title, body string
	}{
		{"text", "Alice", "héllo…"},
		{"sender_only", "Alice", genericTitle},
		{"none", genericTitle, ""},
	} {
		n := Notification{SenderID: "alice"}
		render(&n, m, "Alice", tc.mode, 5)
		if n.Title != tc.title || n.Body != tc.body {
			t.Errorf("%s: %q / %q, want %q / %q", tc.mode, n.Title, n.Body, tc.title, tc.body)
		}
		if tc.mode == "none" && n.SenderID != "" {
			t.Errorf("none leaks the sender %q", n.SenderID)
		}
	}
	if p := previewOf(&savedMsg{MsgType: int(domain.MsgPicture)}, 5); p != "[image]" {
		t.Errorf("picture preview %q", p)
	}
}
