package push

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/streams"
)

// Keys are the push streams and keys, all under one hash tag so a stage's
// step (append the jobs, mark the message done, acknowledge) is one MULTI
// on Redis Cluster too.
type Keys struct {
	prefix string
	// Saved is the stream of saved messages the resolve stage reads.
	Saved string
	// Dead is the dead-letter stream of both stages.
	Dead string
}

// NewKeys returns the keys under prefix (redis.key_prefix).
func NewKeys(prefix string) Keys {
	p := prefix + ":{push}:"
	return Keys{prefix: p, Saved: p + "saved", Dead: p + "dead"}
}

// Send is the send stream of a provider.
func (k Keys) Send(provider string) string { return k.prefix + "send:" + provider }

// done marks a saved message resolved (a redelivered entry is skipped).
func (k Keys) done(conversationID string, seq int64) string {
	return fmt.Sprintf("%sdone:%s:%d", k.prefix, conversationID, seq)
}

// window is the group window of a recipient in a conversation.
func (k Keys) window(userID, conversationID string) string {
	return k.prefix + "gw:" + conversationID + ":" + userID
}

// savedField is the entry field holding a savedMsg as JSON.
const savedField = "msg"

// savedMsg is what the resolve stage needs of a saved message.
type savedMsg struct {
	ServerMsgID    string   `json:"i"`
	ConversationID string   `json:"c"`
	Seq            int64    `json:"s"`
	SessionType    int      `json:"t"`
	SenderID       string   `json:"f"`
	RecvID         string   `json:"r,omitempty"`
	GroupID        string   `json:"g,omitempty"`
	MsgType        int      `json:"m"`
	Text           string   `json:"x,omitempty"`
	AtUserIDs      []string `json:"a,omitempty"`
	SendAt         int64    `json:"at"`
	// SavedAt (Unix ms) starts the latency metric: ACK(saved) to the
	// provider's answer.
	SavedAt int64 `json:"sa"`
	// Recall names the recalled message of a revoke notification.
	Recall *recallRef `json:"rc,omitempty"`
}

type recallRef struct {
	ServerMsgID string `json:"server_msg_id"`
	Seq         int64  `json:"seq"`
}

// revokePrefix starts the client_msg_id of a recall's notification
// (services/sync announces recalls with it).
const revokePrefix = domain.SystemClientMsgIDPrefix + "revoke:"

// savedOf is the entry of m, or false for what never notifies (group and
// other server notifications).
func savedOf(m *domain.Message, now int64) (savedMsg, bool) {
	s := savedMsg{ServerMsgID: m.ServerMsgID, ConversationID: m.ConversationID, Seq: m.Seq, SessionType: int(m.SessionType),
		SenderID: m.SenderID, RecvID: m.RecvID, GroupID: m.GroupID, MsgType: int(m.MsgType), AtUserIDs: m.AtUserIDs,
		SendAt: m.SendAt, SavedAt: now}
	switch {
	case m.MsgType.UserSendable():
		if m.MsgType == domain.MsgText || m.MsgType == domain.MsgAtText || m.MsgType == domain.MsgCustom {
			s.Text = m.Content.Text
		}
		return s, true
	case strings.HasPrefix(m.ClientMsgID, revokePrefix):
		var r recallRef
		if json.Unmarshal([]byte(m.Content.Custom), &r) != nil || r.ServerMsgID == "" {
			return savedMsg{}, false
		}
		s.Recall = &r
		return s, true
	}
	return savedMsg{}, false
}

// Enqueuer is the save stage's AfterSave hook (and the synchronous
// path's): it makes the saved stream's entry of each saved message that
// may notify, which the save's commit adds (streams.Commit.Appends), so
// the save never waits for a provider.
type Enqueuer struct {
	keys Keys
	now  func() time.Time
}

// NewEnqueuer returns the hook.
func NewEnqueuer(keys Keys) *Enqueuer {
	return &Enqueuer{keys: keys, now: time.Now}
}

// AfterSave implements the save stage's AfterSave: one saved-stream entry
// per message that may notify. An error (encoding) retries the save batch;
// the resolve stage resolves an entry added twice once (a done mark).
func (e *Enqueuer) AfterSave(_ context.Context, msgs []domain.Message, _ []bool) ([]streams.Append, error) {
	now := e.now().UnixMilli()
	var out []streams.Append
	for i := range msgs {
		s, ok := savedOf(&msgs[i], now)
		if !ok {
			continue
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("encode push entry: %w", err)
		}
		out = append(out, streams.Append{Stream: e.keys.Saved, Values: []any{savedField, b}})
	}
	return out, nil
}
