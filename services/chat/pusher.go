package chat

import (
	"context"

	"github.com/nexo-im/nexo/domain"
)

// Connections reaches the online connections with pushes in domain terms
// (ws.Pushes, over this instance's registry or the cluster's). It encodes
// each push once however many connections receive it, and never blocks on
// a slow connection.
type Connections interface {
	// PushToUser pushes p to every connection of userID except exceptConn
	// ("" for none) and returns how many accepted it.
	PushToUser(ctx context.Context, userID string, p domain.Push, exceptConn string) int
	// PushToUsers is PushToUser for each of the distinct userIDs.
	PushToUsers(ctx context.Context, userIDs []string, p domain.Push, exceptConn string) int
}

// Pusher makes the pipeline's pushes — messages (2001), ACKs (2101) and
// save failures (3001) — and hands them to Connections. It implements
// workers.Pusher for the deliver and save stages, and AsyncFanout pushes
// the synchronous path's messages with it.
type Pusher struct {
	conns Connections
}

// NewPusher returns a Pusher over conns.
func NewPusher(conns Connections) *Pusher { return &Pusher{conns: conns} }

// AckPushJSON is the data of a 2101 ACK push.
type AckPushJSON struct {
	AckType        string `json:"ack_type"`
	ServerMsgID    string `json:"server_msg_id,omitempty"`
	ClientMsgID    string `json:"client_msg_id,omitempty"`
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	SendAt         int64  `json:"send_at,omitempty"`
	UserID         string `json:"user_id,omitempty"`
}

// SaveFailedJSON is the data of a save_failed error push.
type SaveFailedJSON struct {
	Reason         string `json:"reason"`
	ClientMsgID    string `json:"client_msg_id"`
	ServerMsgID    string `json:"server_msg_id"`
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
}

// reasonSaveFailed is the reason of a 3001 push for domain.ErrSaveFailed,
// repeated in its data so a client reads it where it reads the others'.
const reasonSaveFailed = "save_failed"

// PushMessage pushes m (2001) to every online connection of userIDs except
// exceptConn. The push names m, so each connection's push is audited.
func (p *Pusher) PushMessage(ctx context.Context, m *domain.Message, userIDs []string, exceptConn string) {
	ref := domain.RefOf(m)
	p.conns.PushToUsers(ctx, userIDs, domain.Push{Kind: domain.PushMessage, Data: ToJSON(m), Msg: &ref}, exceptConn)
}

// PushAck pushes a (2101) to every connection of userID.
func (p *Pusher) PushAck(ctx context.Context, userID string, a domain.Ack) {
	data := AckPushJSON{AckType: string(a.Type), ServerMsgID: a.ServerMsgID, ClientMsgID: a.ClientMsgID,
		ConversationID: a.ConversationID, Seq: a.Seq, SendAt: a.SendAt, UserID: a.UserID}
	p.conns.PushToUser(ctx, userID, domain.Push{Kind: domain.PushAck, Data: data}, "")
}

// PushSaveFailed pushes a save_failed error (3001) naming m to every
// connection of its sender.
func (p *Pusher) PushSaveFailed(ctx context.Context, m *domain.Message) {
	data := SaveFailedJSON{Reason: reasonSaveFailed, ClientMsgID: m.ClientMsgID, ServerMsgID: m.ServerMsgID,
		ConversationID: m.ConversationID, Seq: m.Seq}
	p.conns.PushToUser(ctx, m.SenderID, domain.Push{Kind: domain.PushError, Err: domain.ErrSaveFailed, Data: data}, "")
}
