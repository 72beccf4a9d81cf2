package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// ResolveGroup is the consumer group of the saved stream.
const ResolveGroup = "push-resolve"

// doneTTL is how long a resolved message stays marked: longer than any
// redelivery of its entry can take.
const doneTTL = 24 * time.Hour

// recvNormal is recv_msg_opt 0: receive and notify. 1 (no push) and 2
// (push without notification) get no notification.
const recvNormal = 0

// PresenceLookup answers who has a foreground connection (store.Presence):
// the rule of the offline_push webhook.
type PresenceLookup interface {
	Lookup(ctx context.Context, userIDs []string) ([]store.UserPresence, error)
}

// GroupMembers lists a group's active members with their recv_msg_opt
// (group.Members).
type GroupMembers interface {
	ActiveMembers(ctx context.Context, groupID string) (map[string]int, error)
}

// Nicknames resolves display names (store.UserRepo).
type Nicknames interface {
	Nicknames(ctx context.Context, ids []string) (map[string]string, error)
}

// DeviceLookup returns the devices of users and who set a group to
// mentions-only (store.PushDeviceRepo).
type DeviceLookup interface {
	OfUsers(ctx context.Context, userIDs []string) (map[string][]store.PushDevice, error)
	MentionsOnly(ctx context.Context, conversationID string, userIDs []string) (map[string]bool, error)
}

// ResolveDeps are the resolve stage's collaborators.
type ResolveDeps struct {
	Redis     redis.UniversalClient
	Keys      Keys
	Config    configs.Push
	Consumer  string // this instance's stable consumer name
	Presence  PresenceLookup
	Members   GroupMembers
	Convs     ConversationReader
	Nicknames Nicknames
	Devices   DeviceLookup
	// Enabled names the configured providers; devices of others are
	// skipped.
	Enabled map[string]bool
	Log     *slog.Logger
}

// Resolver is the resolve stage: it reads saved messages on a
// streams.Consumer, decides who is notified (recipients with no
// foreground connection, never the sender, recv_msg_opt 0 only, one per
// group window) and appends one job per device to its provider's send
// stream, marking the message done and acknowledging it in the same
// MULTI. A failure retries the whole read (nothing of it was appended).
type Resolver struct {
	d        ResolveDeps
	consumer *streams.Consumer
}

// NewResolver returns the stage.
func NewResolver(d ResolveDeps) *Resolver {
	r := &Resolver{d: d}
	r.consumer = streams.NewConsumer(d.Redis, streams.ConsumerConfig{
		Stream: d.Keys.Saved, Group: ResolveGroup, Consumer: d.Consumer, Count: d.Config.ResolveBatch, Block: time.Second,
		// An entry idle retry_backoff was left by an instance that is gone
		// (a live consumer keeps what it works on fresh).
		ClaimMinIdle: d.Config.RetryBackoff, ClaimEvery: min(d.Config.RetryBackoff/2, time.Second), TrimInterval: time.Minute,
		Retry: streams.RetryPolicy{Backoff: 100 * time.Millisecond, BackoffMax: 5 * time.Second},
		DeadLetter: &streams.DeadLetters{Redis: d.Redis, Input: d.Keys.Saved, Group: ResolveGroup, Stream: d.Keys.Dead,
			MaxLen: d.Config.DeadMaxLen, BodyField: savedField, MaxBody: 2048, DeleteInput: true},
	}, d.Log.With("component", "push resolver"))
	return r
}

// EnsureGroup creates the saved stream and its group if missing.
func (r *Resolver) EnsureGroup(ctx context.Context) error {
	return streams.EnsureGroup(ctx, r.d.Redis, r.d.Keys.Saved, ResolveGroup)
}

// Run resolves until ctx is done, finishing the read in hand.
func (r *Resolver) Run(ctx context.Context) error { return r.consumer.Run(ctx, r.handle) }

// job is one notification to one device: the send streams' entry.
type job struct {
	Device deviceRef    `json:"d"`
	N      Notification `json:"n"`
}

// deviceRef is what a provider needs of a device.
type deviceRef struct {
	ID       string `json:"id"`
	Provider string `json:"p"`
	Token    string `json:"t"`
	P256dh   string `json:"k,omitempty"`
	Auth     string `json:"a,omitempty"`
	Locale   string `json:"l,omitempty"`
}

// jobField is the send entry's field holding a job as JSON.
const jobField = "job"

// target is one recipient of one message.
type target struct {
	msg  *savedMsg
	user string
}

func (r *Resolver) handle(ctx context.Context, entries []redis.XMessage) error {
	failures := streams.Failures{}
	msgs := make([]*savedMsg, 0, len(entries))
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		raw, _ := e.Values[savedField].(string)
		var m savedMsg
		if err := json.Unmarshal([]byte(raw), &m); err != nil || m.ConversationID == "" {
			failures[e.ID] = streams.Permanent(fmt.Errorf("malformed push entry: %v", err))
			continue
		}
		msgs = append(msgs, &m)
		ids = append(ids, e.ID)
	}
	jobs, notified, err := r.resolve(ctx, msgs)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		_, err = r.d.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, j := range jobs {
				b, _ := json.Marshal(j)
				p.XAdd(ctx, &redis.XAddArgs{Stream: r.d.Keys.Send(j.Device.Provider), Values: []any{jobField, b}})
			}
			for _, m := range notified {
				p.Set(ctx, r.d.Keys.done(m.ConversationID, m.Seq), 1, doneTTL)
			}
			p.XAck(ctx, r.d.Keys.Saved, ResolveGroup, ids...)
			p.XDel(ctx, r.d.Keys.Saved, ids...)
			return nil
		})
		if err != nil {
			return fmt.Errorf("push: commit %d jobs of %d messages: %w", len(jobs), len(ids), err)
		}
	}
	return failures.Err()
}

// resolve returns the jobs of msgs and the messages they notify of (to
// be marked done with the jobs).
func (r *Resolver) resolve(ctx context.Context, msgs []*savedMsg) ([]job, []*savedMsg, error) {
	targets, err := r.recipients(ctx, msgs)
	if err != nil || len(targets) == 0 {
		return nil, nil, err
	}
	// Devices first: one query for the read, and most recipients have no
	// device, so the presence and settings lookups below run only for
	// those who could be notified.
	all := make([]string, 0, len(targets))
	for _, t := range targets {
		all = append(all, t.user)
	}
	devices, err := r.d.Devices.OfUsers(ctx, dedupe(all))
	if err != nil {
		return nil, nil, fmt.Errorf("push: devices: %w", err)
	}
	withDevice := targets[:0]
	for _, t := range targets {
		if r.reachable(devices[t.user]) {
			withDevice = append(withDevice, t)
		}
	}
	if targets = withDevice; len(targets) == 0 {
		return nil, nil, nil
	}
	// A message resolved before (its entry redelivered after its jobs
	// were appended) is not resolved again.
	if targets, err = r.notDone(ctx, targets); err != nil || len(targets) == 0 {
		return nil, nil, err
	}
	if targets, err = r.offline(ctx, targets); err != nil || len(targets) == 0 {
		return nil, nil, err
	}
	if targets, err = r.notMuted(ctx, targets); err != nil || len(targets) == 0 {
		return nil, nil, err
	}
	if targets, err = r.mentionsOnly(ctx, targets); err != nil || len(targets) == 0 {
		return nil, nil, err
	}
	if targets, err = r.windowed(ctx, targets); err != nil || len(targets) == 0 {
		return nil, nil, err
	}
	senders := make([]string, 0, len(targets))
	for _, t := range targets {
		senders = append(senders, t.msg.SenderID)
	}
	senders = dedupe(senders)
	names := map[string]string{}
	if r.d.Nicknames != nil {
		if n, err := r.d.Nicknames.Nicknames(ctx, senders); err == nil {
			names = n
		}
	}
	badges := map[string]int64{}
	var jobs []job
	var notified []*savedMsg
	seen := map[*savedMsg]bool{}
	for _, t := range targets {
		devs := devices[t.user]
		if len(devs) == 0 {
			continue
		}
		badge, ok := badges[t.user]
		if !ok {
			if badge, err = TotalUnread(ctx, r.d.Convs, t.user); err != nil {
				return nil, nil, fmt.Errorf("push: badge of %s: %w", t.user, err)
			}
			badges[t.user] = badge
		}
		n := r.notification(t, badge, names)
		for _, d := range devs {
			if !r.d.Enabled[d.Provider] {
				continue
			}
			jobs = append(jobs, job{Device: deviceRef{ID: d.ID, Provider: d.Provider, Token: d.Token, P256dh: d.P256dh, Auth: d.Auth,
				Locale: d.Locale}, N: n})
			if !seen[t.msg] {
				seen[t.msg] = true
				notified = append(notified, t.msg)
			}
		}
	}
	return jobs, notified, nil
}

// notDone drops the targets of messages marked done.
func (r *Resolver) notDone(ctx context.Context, ts []target) ([]target, error) {
	var msgs []*savedMsg
	seen := map[*savedMsg]bool{}
	for _, t := range ts {
		if !seen[t.msg] {
			seen[t.msg] = true
			msgs = append(msgs, t.msg)
		}
	}
	cmds := make([]*redis.IntCmd, len(msgs))
	if _, err := r.d.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range msgs {
			cmds[i] = p.Exists(ctx, r.d.Keys.done(m.ConversationID, m.Seq))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("push: done marks: %w", err)
	}
	done := map[*savedMsg]bool{}
	for i, m := range msgs {
		done[m] = cmds[i].Val() > 0
	}
	out := ts[:0]
	for _, t := range ts {
		if !done[t.msg] {
			out = append(out, t)
		}
	}
	return out, nil
}

// reachable: one of devs is of a configured provider.
func (r *Resolver) reachable(devs []store.PushDevice) bool {
	for _, d := range devs {
		if r.d.Enabled[d.Provider] {
			return true
		}
	}
	return false
}

// notification builds what t's devices are told.
func (r *Resolver) notification(t target, badge int64, names map[string]string) Notification {
	m := t.msg
	n := Notification{Kind: KindMessage, UserID: t.user, ConversationID: m.ConversationID, SessionType: m.SessionType,
		GroupID: m.GroupID, ServerMsgID: m.ServerMsgID, Seq: m.Seq, SendAt: m.SendAt, MsgType: m.MsgType, SenderID: m.SenderID,
		Badge: badge, SavedAt: m.SavedAt}
	if m.Recall != nil {
		n.Kind, n.ServerMsgID, n.Seq, n.MsgType, n.SenderID = KindRecall, m.Recall.ServerMsgID, m.Recall.Seq, 0, ""
		return n
	}
	n.Mentioned = mentions(m, t.user)
	sender := names[m.SenderID]
	if sender == "" {
		sender = m.SenderID
	}
	render(&n, m, sender, r.d.Config.Preview, r.d.Config.PreviewChars)
	return n
}

func mentions(m *savedMsg, user string) bool {
	for _, at := range m.AtUserIDs {
		if at == user || at == store.MentionAll {
			return true
		}
	}
	return false
}

// recipients: the receiver of a single chat, or the group's active members
// with recv_msg_opt 0; never the sender.
func (r *Resolver) recipients(ctx context.Context, msgs []*savedMsg) ([]target, error) {
	var out []target
	groups := map[string]map[string]int{}
	for _, m := range msgs {
		if m.SessionType != int(domain.SessionGroup) {
			if m.RecvID != "" && m.RecvID != m.SenderID {
				out = append(out, target{msg: m, user: m.RecvID})
			}
			continue
		}
		members, ok := groups[m.GroupID]
		if !ok {
			var err error
			members, err = r.d.Members.ActiveMembers(ctx, m.GroupID)
			if errors.Is(err, domain.ErrGroupNotFound) {
				members, err = nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("push: members of %s: %w", m.GroupID, err)
			}
			groups[m.GroupID] = members
		}
		ids := make([]string, 0, len(members))
		for id, opt := range members {
			if id != m.SenderID && opt == recvNormal {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			out = append(out, target{msg: m, user: id})
		}
	}
	return out, nil
}

// offline keeps the targets with no foreground connection on any
// instance (a user whose every connection reported 1104 background
// counts as offline).
func (r *Resolver) offline(ctx context.Context, ts []target) ([]target, error) {
	users := make([]string, 0, len(ts))
	for _, t := range ts {
		users = append(users, t.user)
	}
	ps, err := r.d.Presence.Lookup(ctx, dedupe(users))
	if err != nil {
		return nil, fmt.Errorf("push: presence: %w", err)
	}
	fg := map[string]bool{}
	for _, p := range ps {
		fg[p.UserID] = p.Online && p.Foreground
	}
	out := ts[:0]
	for _, t := range ts {
		if !fg[t.user] {
			out = append(out, t)
		}
	}
	return out, nil
}

// notMuted drops single-chat targets whose conversation has recv_msg_opt
// 1 or 2 (groups were filtered on the member's option).
func (r *Resolver) notMuted(ctx context.Context, ts []target) ([]target, error) {
	byUser := map[string][]string{}
	for _, t := range ts {
		if t.msg.SessionType != int(domain.SessionGroup) {
			byUser[t.user] = append(byUser[t.user], t.msg.ConversationID)
		}
	}
	muted := map[string]bool{} // user + "\x00" + conversation
	for u, convs := range byUser {
		states, err := r.d.Convs.States(ctx, u, dedupe(convs))
		if err != nil {
			return nil, fmt.Errorf("push: conversation settings of %s: %w", u, err)
		}
		for _, st := range states {
			if st.RecvMsgOpt != recvNormal {
				muted[u+"\x00"+st.ConversationID] = true
			}
		}
	}
	out := ts[:0]
	for _, t := range ts {
		if !muted[t.user+"\x00"+t.msg.ConversationID] {
			out = append(out, t)
		}
	}
	return out, nil
}

// mentionsOnly drops group targets who set the conversation to
// mentions-only (POST /push/settings) when the message does not mention
// them; recalls pass (they only withdraw what was shown).
func (r *Resolver) mentionsOnly(ctx context.Context, ts []target) ([]target, error) {
	byConv := map[string][]string{}
	for _, t := range ts {
		if t.msg.SessionType == int(domain.SessionGroup) && t.msg.Recall == nil && !mentions(t.msg, t.user) {
			byConv[t.msg.ConversationID] = append(byConv[t.msg.ConversationID], t.user)
		}
	}
	if len(byConv) == 0 {
		return ts, nil
	}
	only := map[string]bool{} // conversation + "\x00" + user
	for conv, users := range byConv {
		set, err := r.d.Devices.MentionsOnly(ctx, conv, dedupe(users))
		if err != nil {
			return nil, fmt.Errorf("push: mentions-only settings of %s: %w", conv, err)
		}
		for u := range set {
			only[conv+"\x00"+u] = true
		}
	}
	out := ts[:0]
	for _, t := range ts {
		if !only[t.msg.ConversationID+"\x00"+t.user] || mentions(t.msg, t.user) {
			out = append(out, t)
		}
	}
	return out, nil
}

// windowed keeps, for group messages, the first of each recipient's
// push.group_window: the window's key is set with the message's ID, so a
// redelivered message that opened it still notifies. Later messages in
// the window are collapsed into the one shown (same collapse key); recalls
// are never collapsed.
func (r *Resolver) windowed(ctx context.Context, ts []target) ([]target, error) {
	w := r.d.Config.GroupWindow
	if w <= 0 {
		return ts, nil
	}
	cmds := make([]*redis.StatusCmd, len(ts))
	_, err := r.d.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, t := range ts {
			if t.msg.SessionType == int(domain.SessionGroup) && t.msg.Recall == nil {
				cmds[i] = p.SetArgs(ctx, r.d.Keys.window(t.user, t.msg.ConversationID), t.msg.ServerMsgID,
					redis.SetArgs{Mode: "NX", TTL: w, Get: true})
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("push: group windows: %w", err)
	}
	out := ts[:0]
	for i, t := range ts {
		if c := cmds[i]; c != nil {
			if old, err := c.Result(); err == nil && old != t.msg.ServerMsgID {
				continue // inside a window another message opened
			}
		}
		out = append(out, t)
	}
	return out, nil
}

func dedupe(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}
