package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/streams"
)

// Keys names the event stream and its dead-letter stream. Both carry the
// hash tag {webhooks}, so they live in one Redis Cluster slot.
type Keys struct {
	Events, Dead string
}

// NewKeys returns the stream names under prefix (redis.key_prefix).
func NewKeys(prefix string) Keys {
	return Keys{Events: prefix + ":{webhooks}:events", Dead: prefix + ":{webhooks}:dead"}
}

// EventJSON is the body of every asynchronous event. ID is stable across
// redeliveries of one event (after_send: "after_send:<server_msg_id>"), so
// a receiver deduplicates on it; TS is when the event happened (Unix ms).
type EventJSON struct {
	Event string `json:"event"`
	ID    string `json:"id"`
	TS    int64  `json:"ts"`
	Data  any    `json:"data"`
}

// UserEventJSON is the data of user_online and user_offline.
type UserEventJSON struct {
	UserID     string `json:"user_id"`
	PlatformID int    `json:"platform_id"`
}

// GroupChangedJSON is the data of group_changed: the group notification
// message that recorded the change (its msg_type says which: docs/groups.md)
// and its content as sent to members.
type GroupChangedJSON struct {
	GroupID        string          `json:"group_id"`
	ConversationID string          `json:"conversation_id"`
	Seq            int64           `json:"seq"`
	MsgType        int             `json:"msg_type"`
	OpUserID       string          `json:"op_user_id"`
	Notification   json.RawMessage `json:"notification,omitempty"`
	SendAt         int64           `json:"send_at"`
}

// Offline takes saved messages for offline push (OfflinePush).
type Offline interface {
	Add(msgs []domain.Message)
}

// Emitter appends events to the stream; the Deliverer sends them. Appending
// is all the message pipeline ever waits for.
type Emitter struct {
	rdb      redis.UniversalClient
	keys     Keys
	instance string
	enabled  map[string]bool
	offline  Offline
	log      *slog.Logger
}

// NewEmitter returns the emitter for the events cfg enables; offline may
// be nil (offline_push off). instanceID names this instance in every
// entry it appends (field instance_id, as the pipeline's entries carry it);
// "" leaves the field out.
func NewEmitter(rdb redis.UniversalClient, keys Keys, instanceID string, cfg configs.Webhooks, offline Offline, log *slog.Logger) *Emitter {
	e := &Emitter{rdb: rdb, keys: keys, instance: instanceID, enabled: map[string]bool{}, offline: offline, log: log}
	for _, ev := range cfg.Events {
		if cfg.EventURL(ev) != "" {
			e.enabled[ev] = true
		}
	}
	return e
}

// SetOffline hands fresh messages to offline push from now on; call it
// before serving.
func (e *Emitter) SetOffline(o Offline) { e.offline = o }

// Enabled reports whether event is sent.
func (e *Emitter) Enabled(event string) bool { return e.enabled[event] }

// appends are the events stream's entries of events.
func (e *Emitter) appends(events []EventJSON) ([]streams.Append, error) {
	out := make([]streams.Append, 0, len(events))
	for _, ev := range events {
		body, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", ev.Event, err)
		}
		values := []any{"event", ev.Event, "id", ev.ID, "body", body}
		if e.instance != "" {
			values = append(values, "instance_id", e.instance)
		}
		out = append(out, streams.Append{Stream: e.keys.Events, Values: values})
	}
	return out, nil
}

// xadd appends events in one pipelined round trip.
func (e *Emitter) xadd(ctx context.Context, events []EventJSON) error {
	apps, err := e.appends(events)
	if err != nil {
		return err
	}
	if err := streams.AppendAll(ctx, e.rdb, apps); err != nil {
		return fmt.Errorf("append %d webhook events: %w", len(events), err)
	}
	return nil
}

// Emit appends one event with a fresh ID (nothing when it is disabled).
func (e *Emitter) Emit(ctx context.Context, event string, data any) error {
	if !e.enabled[event] {
		return nil
	}
	return e.xadd(ctx, []EventJSON{{Event: event, ID: uuid.NewString(), TS: time.Now().UnixMilli(), Data: data}})
}

// EmitWithID appends one event whose ID the caller makes stable for what
// it reports (e.g. "message_reported:<report_id>"), so a receiver can
// deduplicate it; nothing when the event is disabled.
func (e *Emitter) EmitWithID(ctx context.Context, event, id string, data any) error {
	if !e.enabled[event] {
		return nil
	}
	return e.xadd(ctx, []EventJSON{{Event: event, ID: id, TS: time.Now().UnixMilli(), Data: data}})
}

// AfterSave implements the save stage's AfterSave: it returns the events
// stream's after_send entries for user messages and group_changed entries
// for group notifications, which the save's commit adds, and hands fresh
// messages to offline push. An error (encoding) makes the save stage retry
// the batch, so an event is appended at least once per saved message; its
// ID (the event and the server_msg_id) lets a receiver drop a repeat.
func (e *Emitter) AfterSave(_ context.Context, msgs []domain.Message, fresh []bool) ([]streams.Append, error) {
	var events []EventJSON
	var push []domain.Message
	for i := range msgs {
		m := &msgs[i]
		if m.Status == domain.StatusRevoked || m.Status == domain.StatusFailed {
			continue
		}
		notice := m.MsgType >= domain.MsgNotificationMin
		switch {
		case !notice && e.enabled[configs.EventAfterSend]:
			events = append(events, EventJSON{Event: configs.EventAfterSend, ID: configs.EventAfterSend + ":" + m.ServerMsgID,
				TS: m.SendAt, Data: chat.ToJSON(m)})
		case notice && m.SessionType == domain.SessionGroup && e.enabled[configs.EventGroupChanged]:
			g := GroupChangedJSON{GroupID: m.GroupID, ConversationID: m.ConversationID, Seq: m.Seq, MsgType: int(m.MsgType),
				OpUserID: m.SenderID, SendAt: m.SendAt}
			if json.Valid([]byte(m.Content.Custom)) {
				g.Notification = json.RawMessage(m.Content.Custom)
			}
			events = append(events, EventJSON{Event: configs.EventGroupChanged, ID: configs.EventGroupChanged + ":" + m.ServerMsgID,
				TS: m.SendAt, Data: g})
		}
		if e.offline != nil && (i >= len(fresh) || fresh[i]) && !notice {
			push = append(push, *m)
		}
	}
	apps, err := e.appends(events)
	if err != nil {
		return nil, err
	}
	if len(push) > 0 {
		e.offline.Add(push)
	}
	return apps, nil
}

// UserOnline implements presence.Events.
func (e *Emitter) UserOnline(ctx context.Context, userID string, platformID int) {
	if err := e.Emit(ctx, configs.EventUserOnline, UserEventJSON{UserID: userID, PlatformID: platformID}); err != nil {
		e.log.Warn("user_online event lost", "user_id", userID, "err", err)
	}
}

// UserOffline implements presence.Events.
func (e *Emitter) UserOffline(ctx context.Context, userID string, platformID int) {
	if err := e.Emit(ctx, configs.EventUserOffline, UserEventJSON{UserID: userID, PlatformID: platformID}); err != nil {
		e.log.Warn("user_offline event lost", "user_id", userID, "err", err)
	}
}
