package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/nexo-im/nexo/configs"
)

// WebPush sends with VAPID (RFC 8292) and the aes128gcm payload
// encryption (RFC 8291) through github.com/SherClockHolmes/webpush-go. The
// payload is the Notification as JSON, which the service worker
// (web/static/push-sw.js) shows, or, for a recall, uses to close what it
// showed.
type WebPush struct {
	cfg    configs.PushWebPush
	client *http.Client
}

// NewWebPush returns the provider; client carries the requests (nil: a
// client with no timeout of its own; requests are bounded by ctx).
func NewWebPush(cfg configs.PushWebPush, client *http.Client) *WebPush {
	if client == nil {
		client = &http.Client{}
	}
	return &WebPush{cfg: cfg, client: client}
}

// Send implements Provider. 404 and 410 mean the subscription is gone.
func (w *WebPush) Send(ctx context.Context, d deviceRef, n Notification) error {
	body, err := json.Marshal(n)
	if err != nil {
		return &SendError{Reason: "rejected", Detail: err.Error()}
	}
	urgency := webpush.UrgencyHigh
	if n.Kind == KindRecall {
		urgency = webpush.UrgencyNormal
	}
	resp, err := webpush.SendNotificationWithContext(ctx, body, &webpush.Subscription{Endpoint: d.Token,
		Keys: webpush.Keys{P256dh: d.P256dh, Auth: d.Auth}}, &webpush.Options{
		HTTPClient: w.client,
		// The library prefixes "mailto:" to anything not https.
		Subscriber:      strings.TrimPrefix(w.cfg.Subject, "mailto:"),
		Topic:           collapseID(n.ConversationID),
		TTL:             int(w.cfg.TTL.Seconds()),
		Urgency:         urgency,
		VAPIDPublicKey:  w.cfg.VAPIDPublicKey,
		VAPIDPrivateKey: w.cfg.VAPIDPrivateKey,
	})
	if err != nil {
		if ctx.Err() != nil || isNetErr(err) {
			return networkError(err)
		}
		return &SendError{Reason: "rejected", Detail: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	gone := resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone
	return httpError(resp.StatusCode, resp.Header, gone, strings.TrimSpace(string(raw)))
}

// isNetErr: the library's own errors are about keys; the HTTP client's
// are *url.Error (no answer).
func isNetErr(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// vapidFile is the embedded mode's key pair, in its data directory.
const vapidFile = "vapid.json"

type vapidPair struct {
	PublicKey  string `json:"vapid_public_key"`
	PrivateKey string `json:"vapid_private_key"`
}

// LoadOrCreateVAPID returns the key pair kept in dir, generating and
// saving one (mode 0600) on first use: the embedded mode's Web Push keys,
// stable across restarts so subscriptions stay valid.
func LoadOrCreateVAPID(dir string) (public, private string, err error) {
	path := filepath.Join(dir, vapidFile)
	if b, err := os.ReadFile(path); err == nil {
		var p vapidPair
		if err := json.Unmarshal(b, &p); err != nil || p.PublicKey == "" || p.PrivateKey == "" {
			return "", "", fmt.Errorf("%s is not a VAPID key pair: %v", path, err)
		}
		return p.PublicKey, p.PrivateKey, nil
	} else if !os.IsNotExist(err) {
		return "", "", fmt.Errorf("read %s: %w", path, err)
	}
	private, public, err = webpush.GenerateVAPIDKeys()
	if err != nil {
		return "", "", fmt.Errorf("generate VAPID keys: %w", err)
	}
	b, _ := json.Marshal(vapidPair{PublicKey: public, PrivateKey: private})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", path, err)
	}
	return public, private, nil
}
