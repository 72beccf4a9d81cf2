package webhook

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Receive options (conversations.recv_msg_opt / group member option):
// 1 no push, 2 push without notification. Neither gets offline push.
const recvNormal = 0

// PresenceLookup answers who is online and in the foreground
// (store.Presence).
type PresenceLookup interface {
	Lookup(ctx context.Context, userIDs []string) ([]store.UserPresence, error)
}

// GroupMembers lists a group's active members with their recv_msg_opt
// (group.Members).
type GroupMembers interface {
	ActiveMembers(ctx context.Context, groupID string) (map[string]int, error)
}

// ConversationStates reads a user's conversation states: recv_msg_opt,
// max seq, read cursor (store.ConversationRepo).
type ConversationStates interface {
	States(ctx context.Context, ownerID string, conversationIDs []string) ([]store.ConversationState, error)
}

// OfflinePushJSON is the data of an offline_push event: one per recipient
// per webhooks.offline_push.batch_wait, listing each conversation with new
// messages for them.
type OfflinePushJSON struct {
	UserID        string            `json:"user_id"`
	Conversations []OfflineConvJSON `json:"conversations"`
	Badge         int64             `json:"badge"`
}

// OfflineConvJSON is one conversation of an offline_push.
type OfflineConvJSON struct {
	ConversationID string `json:"conversation_id"`
	SessionType    int    `json:"session_type"`
	GroupID        string `json:"group_id,omitempty"`
	// SenderID and SenderNickname are of the newest message.
	SenderID       string `json:"sender_id"`
	SenderNickname string `json:"sender_nickname"`
	// Preview is the start of the newest message's text ("[image]" etc.
	// for other types), or "" with push.preview none.
	Preview string `json:"preview"`
	MsgType int    `json:"msg_type"`
	Seq     int64  `json:"seq"`
	SendAt  int64  `json:"send_at"`
	// Messages is how many arrived in this batch; UnreadCount how many the
	// user has not read in the conversation (saved max seq - read seq).
	Messages    int   `json:"messages"`
	UnreadCount int64 `json:"unread_count"`
	// Mentioned: one of the messages @-mentions the user (or everyone).
	Mentioned bool `json:"mentioned"`
}

// Nicknames resolves display names (store.UserRepo).
type Nicknames interface {
	Nicknames(ctx context.Context, ids []string) (map[string]string, error)
}

// OfflinePush turns saved messages into offline_push events for recipients
// with no foreground connection on any instance (store.Presence): a user
// counts as online while any connection has not reported 1104 background.
// Messages are collected in memory for batch_wait and resolved off the
// pipeline's path; a crash loses the batch in hand (push notifications are
// best effort; the messages themselves are saved and resent on connect).
type OfflinePush struct {
	cfg      configs.OfflinePush
	presence PresenceLookup
	members  GroupMembers
	convs    ConversationStates
	names    Nicknames
	emit     func(ctx context.Context, event string, data any) error
	log      *slog.Logger

	mu      sync.Mutex
	pending []domain.Message
	wake    chan struct{}
}

// OfflineDeps are OfflinePush's collaborators.
type OfflineDeps struct {
	Config    configs.OfflinePush
	Presence  PresenceLookup
	Members   GroupMembers
	Convs     ConversationStates
	Nicknames Nicknames
	Log       *slog.Logger
}

// maxPending bounds the messages waiting for a flush; beyond it new ones
// are dropped (and logged) rather than growing without limit.
const maxPending = 200000

// NewOfflinePush returns the batcher; SetEmitter must be called before Run.
func NewOfflinePush(d OfflineDeps) *OfflinePush {
	return &OfflinePush{cfg: d.Config, presence: d.Presence, members: d.Members, convs: d.Convs, names: d.Nicknames,
		log: d.Log, wake: make(chan struct{}, 1)}
}

// SetEmitter sets where events go (Emitter.Emit).
func (o *OfflinePush) SetEmitter(e *Emitter) {
	o.emit = func(ctx context.Context, event string, data any) error {
		return e.xadd(ctx, []EventJSON{{Event: event, ID: uuid.NewString(), TS: time.Now().UnixMilli(), Data: data}})
	}
}

// Add implements Offline: it only appends (the save stage calls it).
func (o *OfflinePush) Add(msgs []domain.Message) {
	o.mu.Lock()
	if len(o.pending)+len(msgs) > maxPending {
		o.mu.Unlock()
		o.log.Warn("offline push backlog full: messages skipped", "skipped", len(msgs))
		return
	}
	o.pending = append(o.pending, msgs...)
	o.mu.Unlock()
}

// Run flushes every batch_wait until ctx is done (a last flush runs then).
// A flush is never cut short by ctx: its batch is already taken, and a
// shutdown must not lose it (each is bounded by 5 s instead).
func (o *OfflinePush) Run(ctx context.Context) error {
	wait := max(o.cfg.BatchWait, 10*time.Millisecond)
	t := time.NewTicker(wait)
	defer t.Stop()
	flush := func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		o.Flush(fctx)
	}
	for {
		select {
		case <-ctx.Done():
			flush()
			return nil
		case <-t.C:
			flush()
		}
	}
}

// Flush resolves the messages collected so far into offline_push events.
func (o *OfflinePush) Flush(ctx context.Context) {
	o.mu.Lock()
	batch := o.pending
	o.pending = nil
	o.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	byUser := o.recipients(ctx, batch)
	if len(byUser) == 0 {
		return
	}
	users := make([]string, 0, len(byUser))
	for u := range byUser {
		users = append(users, u)
	}
	slices.Sort(users)
	ps, err := o.presence.Lookup(ctx, users)
	if err != nil {
		o.log.Warn("offline push: presence lookup failed; batch skipped", "users", len(users), "err", err)
		return
	}
	var senders []string
	var offline []string
	for _, p := range ps {
		if p.Online && p.Foreground {
			continue
		}
		offline = append(offline, p.UserID)
		for _, m := range byUser[p.UserID] {
			senders = append(senders, m.SenderID)
		}
	}
	if len(offline) == 0 {
		return
	}
	names := map[string]string{}
	if o.names != nil {
		if n, err := o.names.Nicknames(ctx, dedupe(senders)); err == nil {
			names = n
		}
	}
	for _, u := range offline {
		if ev, ok := o.event(ctx, u, byUser[u], names); ok {
			if err := o.emit(ctx, configs.EventOfflinePush, ev); err != nil {
				o.log.Warn("offline push event lost", "user_id", u, "err", err)
			}
		}
	}
}

// recipients maps each recipient to the batch's messages for them (group
// members whose recv_msg_opt is not normal are left out; senders never
// get their own messages).
func (o *OfflinePush) recipients(ctx context.Context, batch []domain.Message) map[string][]*domain.Message {
	out := map[string][]*domain.Message{}
	groups := map[string]map[string]int{}
	for i := range batch {
		m := &batch[i]
		if m.SessionType != domain.SessionGroup {
			if m.RecvID != m.SenderID {
				out[m.RecvID] = append(out[m.RecvID], m)
			}
			continue
		}
		members, ok := groups[m.GroupID]
		if !ok {
			var err error
			if members, err = o.members.ActiveMembers(ctx, m.GroupID); err != nil {
				o.log.Warn("offline push: group members unavailable", "group_id", m.GroupID, "err", err)
			}
			groups[m.GroupID] = members
		}
		for id, opt := range members {
			if id != m.SenderID && opt == recvNormal {
				out[id] = append(out[id], m)
			}
		}
	}
	return out
}

// event builds one recipient's offline_push; false when every conversation
// is muted (single chat recv_msg_opt).
func (o *OfflinePush) event(ctx context.Context, user string, msgs []*domain.Message, names map[string]string) (OfflinePushJSON, bool) {
	order := []string{}
	byConv := map[string]*OfflineConvJSON{}
	for _, m := range msgs {
		c := byConv[m.ConversationID]
		if c == nil {
			c = &OfflineConvJSON{ConversationID: m.ConversationID, SessionType: int(m.SessionType), GroupID: m.GroupID}
			byConv[m.ConversationID] = c
			order = append(order, m.ConversationID)
		}
		c.Messages++
		if m.Seq >= c.Seq {
			c.Seq, c.SendAt, c.MsgType, c.SenderID = m.Seq, m.SendAt, int(m.MsgType), m.SenderID
			c.SenderNickname = names[m.SenderID]
			c.Preview = o.preview(m)
		}
		for _, at := range m.AtUserIDs {
			if at == user || at == store.MentionAll {
				c.Mentioned = true
			}
		}
	}
	states, err := o.convs.States(ctx, user, order)
	if err != nil {
		o.log.Warn("offline push: conversation states unavailable; unread counts left 0", "user_id", user, "err", err)
	}
	ev := OfflinePushJSON{UserID: user}
	muted := map[string]bool{}
	for _, st := range states {
		c := byConv[st.ConversationID]
		if c == nil {
			continue
		}
		if st.RecvMsgOpt != recvNormal {
			muted[st.ConversationID] = true
			continue
		}
		c.UnreadCount = max(st.VisibleMax()-st.Cursor.ReadSeq, int64(c.Messages))
	}
	for _, id := range order {
		if muted[id] {
			continue
		}
		c := byConv[id]
		if c.UnreadCount == 0 {
			c.UnreadCount = int64(c.Messages)
		}
		ev.Badge += c.UnreadCount
		ev.Conversations = append(ev.Conversations, *c)
	}
	return ev, len(ev.Conversations) > 0
}

// preview is the notification text of m per webhooks.offline_push.preview.
func (o *OfflinePush) preview(m *domain.Message) string {
	if o.cfg.Preview == "none" {
		return ""
	}
	switch m.MsgType {
	case domain.MsgText, domain.MsgAtText:
	case domain.MsgPicture:
		return "[image]"
	case domain.MsgVoice:
		return "[voice]"
	case domain.MsgVideo:
		return "[video]"
	case domain.MsgFile:
		return "[file]"
	default:
		if m.Content.Text == "" {
			return "[message]"
		}
	}
	t := m.Content.Text
	if utf8.RuneCountInString(t) <= o.cfg.PreviewChars {
		return t
	}
	r := []rune(t)
	return string(r[:o.cfg.PreviewChars]) + "…"
}

func dedupe(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}
