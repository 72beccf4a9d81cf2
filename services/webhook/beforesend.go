package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// MessageJSON is a message in webhook payloads: chat.MessageJSON, the same
// shape as pushes and pulls (before_send has no seq or server_msg_id yet).
type MessageJSON = chat.MessageJSON

// BeforeSendJSON is the body of a before_send call.
type BeforeSendJSON struct {
	Event   string      `json:"event"`
	ID      string      `json:"id"`
	TS      int64       `json:"ts"`
	Message MessageJSON `json:"message"`
}

// Verdict is the receiver's answer to before_send. An empty body or
// {"action": "allow"} lets the message through; "reject" refuses it with
// message_rejected and reason as the detail; "replace" sends content
// instead (same msg_type, re-checked against msg.max_body_bytes).
type Verdict struct {
	Action  string            `json:"action"`
	Reason  string            `json:"reason"`
	Content *chat.ContentJSON `json:"content"`
}

// BeforeSend is the synchronous before_send hook (chat.SendHook).
type BeforeSend struct {
	client  *Client
	url     string
	timeout time.Duration
	reject  bool // on_error: reject
	log     *slog.Logger
	verdict *prometheus.CounterVec
}

// NewBeforeSend returns the hook posting to url with cfg's timeout and
// on_error; reg may be nil.
func NewBeforeSend(client *Client, url string, cfg configs.BeforeSend, reg prometheus.Registerer, log *slog.Logger) *BeforeSend {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nexo_webhook_before_send_total",
		Help: "before_send verdicts: allow, reject, replace, error_allowed, error_rejected.",
	}, []string{"verdict"})
	if reg != nil {
		reg.MustRegister(v)
	}
	return &BeforeSend{client: client, url: url, timeout: cfg.Timeout, reject: cfg.OnError == configs.OnErrorReject, log: log, verdict: v}
}

// maxReason caps the reason shown to the sender.
const maxReason = 256

// BeforeSend implements chat.SendHook.
func (b *BeforeSend) BeforeSend(ctx context.Context, m *domain.Message) error {
	id := uuid.NewString()
	msg := chat.ToJSON(m)
	body, err := json.Marshal(BeforeSendJSON{Event: configs.EventBeforeSend, ID: id, TS: time.Now().UnixMilli(), Message: msg})
	if err != nil {
		return fmt.Errorf("before_send: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	answer, err := b.client.Post(cctx, b.url, configs.EventBeforeSend, id, body)
	var v Verdict
	if err == nil && len(bytes.TrimSpace(answer)) > 0 {
		if jerr := json.Unmarshal(answer, &v); jerr != nil {
			err = fmt.Errorf("before_send answer is not a verdict: %w", jerr)
		}
	}
	if err != nil {
		return b.failed(m, err)
	}
	switch v.Action {
	case "", "allow":
		b.verdict.WithLabelValues("allow").Inc()
		return nil
	case "reject":
		b.verdict.WithLabelValues("reject").Inc()
		reason := v.Reason
		if len(reason) > maxReason {
			reason = reason[:maxReason]
		}
		if reason == "" {
			reason = "rejected by the app"
		}
		return domain.NewError(domain.ErrMessageRejected, reason)
	case "replace":
		if v.Content == nil {
			return b.failed(m, errors.New(`before_send "replace" without content`))
		}
		b.verdict.WithLabelValues("replace").Inc()
		c := v.Content
		m.Content = domain.Content{Text: c.Text, Image: string(c.Image), Video: string(c.Video), Audio: string(c.Audio), File: string(c.File)}
		if len(c.Custom) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, c.Custom) == nil {
				m.Content.Custom = buf.String()
			}
		}
		return nil
	}
	return b.failed(m, fmt.Errorf("before_send action %q is not allow, reject or replace", v.Action))
}

// failed applies on_error to a call that failed, timed out or answered
// nonsense.
func (b *BeforeSend) failed(m *domain.Message, err error) error {
	b.log.Warn("before_send failed", "client_msg_id", m.ClientMsgID, "sender_id", m.SenderID, "reject", b.reject, "err", err)
	if b.reject {
		b.verdict.WithLabelValues("error_rejected").Inc()
		return domain.NewError(domain.ErrMessageRejected, "the app's before_send check did not answer (webhooks.before_send.on_error: reject)")
	}
	b.verdict.WithLabelValues("error_allowed").Inc()
	return nil
}
