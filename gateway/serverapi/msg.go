package serverapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/google/uuid"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/chat"
)

// MsgNotification is the msg_type of a notification the app sends through
// POST /api/msg/send_notification (OpenIM's OA notification number).
const MsgNotification domain.MsgType = 1400

// splitOp decodes a body {"<opField>": "...", ...rest} as strictly as
// any route (api.BindJSON: Content-Type, size, duplicate names): opField
// is taken out (required and a user ID unless optional) and the rest
// decodes into dst as the route it stands in for would decode it. defaults
// fills fields the body left out.
func (a *API) splitOp(c *app.RequestContext, opField string, optional bool, dst any, defaults map[string]any) (string, error) {
	var fields map[string]json.RawMessage
	if err := api.BindJSON(c, a.d.MaxBody, &fields); err != nil {
		return "", err
	}
	var op string
	if raw, ok := fields[opField]; ok {
		if err := json.Unmarshal(raw, &op); err != nil {
			return "", domain.BadField(opField, "must be a string")
		}
		delete(fields, opField)
	}
	if !(optional && op == "") {
		if err := domain.CheckID(opField, op); err != nil {
			return "", err
		}
	}
	for k, v := range defaults {
		if _, ok := fields[k]; !ok {
			fields[k], _ = json.Marshal(v)
		}
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return "", domain.BadField("body", "must be a JSON object")
	}
	return op, api.DecodeJSON(rest, len(rest), dst)
}

// sendMessage handles POST /api/msg/send: the body of /msg/send plus
// send_id (the sender) — the message goes through the same pipeline as a
// client's (validation, permission, before_send, ACK). client_msg_id may be
// left out (a UUID is generated; give one to make retries idempotent).
func (a *API) sendMessage(ctx context.Context, c *app.RequestContext) {
	var req chat.SendRequest
	sender, err := a.splitOp(c, "send_id", false, &req, map[string]any{"client_msg_id": "api-" + uuid.NewString()})
	if err != nil {
		a.write(ctx, c, nil, err)
		return
	}
	ack, err := a.d.Chat.Send(ctx, chat.Origin{UserID: sender, App: true}, req)
	a.write(ctx, c, ack, err)
}

// NotificationRequest is the body of POST /api/msg/send_notification.
type NotificationRequest struct {
	// SendID is the sender shown; empty is server_api's system user.
	SessionType int    `json:"session_type"`
	RecvID      string `json:"recv_id"`
	GroupID     string `json:"group_id"`
	// Text and/or Custom (any JSON) are the notification.
	Text   string          `json:"text"`
	Custom json.RawMessage `json:"custom"`
}

// Validate checks the target and that there is something to say.
func (r *NotificationRequest) Validate() error {
	switch r.SessionType {
	case int(domain.SessionSingle):
		if !domain.ValidID(r.RecvID) || r.GroupID != "" {
			return domain.BadField("recv_id", "is required (and group_id empty) for session_type 1")
		}
	case int(domain.SessionGroup):
		if !domain.ValidID(r.GroupID) || r.RecvID != "" {
			return domain.BadField("group_id", "is required (and recv_id empty) for session_type 3")
		}
	default:
		return domain.BadField("session_type", "must be 1 (single chat) or 3 (group chat)")
	}
	if r.Text == "" && len(r.Custom) == 0 {
		return domain.BadField("text", "or custom is required")
	}
	if len(r.Custom) > 0 && !json.Valid(r.Custom) {
		return domain.BadField("custom", "must be valid JSON")
	}
	return nil
}

// sendNotification handles POST /api/msg/send_notification: a system
// notification (msg_type 1400) to a user or a group, from send_id or, when
// empty, from the system user (server_api.system_user_id). It is stored and
// delivered as any message (seq, pull, offline push) but skips the sender's
// permission checks: the app has decided.
func (a *API) sendNotification(ctx context.Context, c *app.RequestContext) {
	var req NotificationRequest
	sender, err := a.splitOp(c, "send_id", true, &req, nil)
	if err != nil {
		a.write(ctx, c, nil, err)
		return
	}
	if sender == "" {
		sender = a.d.SystemUserID
	}
	m := domain.Message{SenderID: sender, SessionType: domain.SessionType(req.SessionType), MsgType: MsgNotification,
		Content: domain.Content{Text: req.Text}}
	if len(req.Custom) > 0 {
		var buf bytes.Buffer
		_ = json.Compact(&buf, req.Custom)
		m.Content.Custom = buf.String()
	}
	if m.SessionType == domain.SessionGroup {
		if _, err := a.d.Groups.Info(ctx, req.GroupID); err != nil {
			a.write(ctx, c, nil, err)
			return
		}
		m.GroupID, m.ConversationID = req.GroupID, domain.GroupConversationID(req.GroupID)
	} else {
		if _, err := a.d.Users.Get(ctx, req.RecvID); err != nil {
			a.write(ctx, c, nil, err)
			return
		}
		m.RecvID, m.ConversationID = req.RecvID, domain.SingleConversationID(sender, req.RecvID)
	}
	ack, err := a.d.Chat.SendSystem(ctx, m)
	if err != nil {
		err = fmt.Errorf("send notification: %w", err)
	}
	a.write(ctx, c, ack, err)
}

// registerGroups mounts the group operations of the user API's route
// table under /api/group/*, each run as the body's op_user_id.
func (a *API) registerGroups(r routes.HTTP) {
	routes.GroupServerAPI(r, a.d.Groups, a.actingUser, a.d.Log)
}

// actingUser reads a group operation's request on the server API: the
// body is the user route's body plus op_user_id, the member on whose
// behalf it runs (the same rules apply as if they had called it).
func (a *API) actingUser(c *app.RequestContext, dst any) (string, error) {
	return a.splitOp(c, "op_user_id", false, dst, nil)
}
