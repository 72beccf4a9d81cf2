package push

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/payload"
	"github.com/sideshow/apns2/token"

	"github.com/nexo-im/nexo/configs"
)

// APNs sends through the Apple Push Notification service over HTTP/2 with
// token auth (github.com/sideshow/apns2: it signs and refreshes the
// provider JWT from the .p8 key).
type APNs struct {
	client *apns2.Client
	topic  string
}

// NewAPNs reads the .p8 key of cfg. client, when set, replaces the
// library's HTTP/2 client (tests: a local receiver's TLS client).
func NewAPNs(cfg configs.PushAPNs, client *http.Client) (*APNs, error) {
	key, err := token.AuthKeyFromFile(cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("push.apns.key_file: %w", err)
	}
	c := apns2.NewTokenClient(&token.Token{AuthKey: key, KeyID: cfg.KeyID, TeamID: cfg.TeamID})
	if cfg.Production {
		c = c.Production()
	} else {
		c = c.Development()
	}
	if cfg.Endpoint != "" {
		c.Host = cfg.Endpoint
	}
	if client != nil {
		c.HTTPClient = client
	}
	return &APNs{client: c, topic: cfg.Topic}, nil
}

// apnsNotification is the request: an alert with the badge, thread and
// collapse ID per conversation for a new message; a background push
// (content-available, priority 5) for a recall's silent update.
func apnsNotification(topic, deviceToken string, n Notification) *apns2.Notification {
	p := payload.NewPayload().Badge(int(n.Badge)).Custom("conversation_id", n.ConversationID).
		Custom("server_msg_id", n.ServerMsgID).Custom("seq", n.Seq).Custom("kind", n.Kind).Custom("session_type", n.SessionType)
	if n.GroupID != "" {
		p.Custom("group_id", n.GroupID)
	}
	out := &apns2.Notification{DeviceToken: deviceToken, Topic: topic, Payload: p}
	if n.Kind == KindRecall {
		p.ContentAvailable()
		out.PushType, out.Priority = apns2.PushTypeBackground, apns2.PriorityLow
		return out
	}
	p.AlertTitle(n.Title).ThreadID(collapseID(n.ConversationID)).Sound("default")
	if n.Body != "" {
		p.AlertBody(n.Body)
	}
	if n.SenderID != "" {
		p.Custom("sender_id", n.SenderID)
	}
	out.PushType, out.Priority, out.CollapseID = apns2.PushTypeAlert, apns2.PriorityHigh, collapseID(n.ConversationID)
	return out
}

// Send implements Provider. 410 (Unregistered) and BadDeviceToken mean the
// token is gone.
func (a *APNs) Send(ctx context.Context, d deviceRef, n Notification) error {
	resp, err := a.client.PushWithContext(ctx, apnsNotification(a.topic, d.Token, n))
	if err != nil {
		return networkError(err)
	}
	if resp.Sent() {
		return nil
	}
	gone := resp.StatusCode == http.StatusGone || resp.Reason == apns2.ReasonBadDeviceToken || resp.Reason == apns2.ReasonUnregistered
	return httpError(resp.StatusCode, http.Header{}, gone, resp.Reason)
}
