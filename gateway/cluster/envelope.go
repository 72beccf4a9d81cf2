package cluster

import (
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/nexo-im/nexo/gateway/ws"
)

// Envelope kinds (metadata "kind").
const (
	kindPush       = "push"       // payload: an encoded frame for users
	kindRevoke     = "revoke"     // end sessions of a revoked token
	kindKick       = "kick"       // login policy: a newer connection elsewhere
	kindDisconnect = "disconnect" // end every session of users (reason, detail)
	kindJoin       = "join"       // an instance joined: re-read the live set
)

// Metadata keys. Small values only: they travel as redisstream metadata
// (msgpack) and NATS headers. User IDs cannot contain commas
// (domain.ValidID), so a list is comma-joined.
const (
	mdKind     = "kind"
	mdUsers    = "users"
	mdExcept   = "except"
	mdAt       = "at" // Unix ms when published
	mdFrom     = "from"
	mdPlatform = "platform"
	mdJTI      = "jti"
	mdSince    = "since" // Unix ns when the kicking connection registered
	mdReason   = "reason"
	mdDetail   = "detail"
	// A push's message (ws.MsgRef), so the receiving instance audits each
	// connection's push: server_msg_id, conversation_id, seq.
	mdMsgID = "msg_id"
	mdConv  = "conv"
	mdSeq   = "seq"
)

// envelope is one inbox message: the kind, its recipients and, for a push,
// the frame bytes exactly as the publisher encoded them (payload).
type envelope struct {
	kind     string
	users    []string
	except   string
	at       time.Time
	from     string
	platform int
	jti      string
	since    time.Time
	reason   string
	detail   string
	msg      *ws.MsgRef // a push's message, when its frame was tagged
	payload  []byte
}

func (e *envelope) message() *message.Message {
	m := message.NewMessage(watermill.NewULID(), e.payload)
	md := m.Metadata
	md.Set(mdKind, e.kind)
	md.Set(mdUsers, strings.Join(e.users, ","))
	md.Set(mdAt, strconv.FormatInt(e.at.UnixMilli(), 10))
	md.Set(mdFrom, e.from)
	if e.except != "" {
		md.Set(mdExcept, e.except)
	}
	if e.platform != 0 {
		md.Set(mdPlatform, strconv.Itoa(e.platform))
	}
	if e.jti != "" {
		md.Set(mdJTI, e.jti)
	}
	if !e.since.IsZero() {
		md.Set(mdSince, strconv.FormatInt(e.since.UnixNano(), 10))
	}
	if e.reason != "" {
		md.Set(mdReason, e.reason)
		md.Set(mdDetail, e.detail)
	}
	if e.msg != nil {
		md.Set(mdMsgID, e.msg.ServerMsgID)
		md.Set(mdConv, e.msg.ConversationID)
		md.Set(mdSeq, strconv.FormatInt(e.msg.Seq, 10))
	}
	return m
}

func parseEnvelope(m *message.Message) envelope {
	md := m.Metadata
	e := envelope{kind: md.Get(mdKind), except: md.Get(mdExcept), from: md.Get(mdFrom), jti: md.Get(mdJTI),
		reason: md.Get(mdReason), detail: md.Get(mdDetail), payload: m.Payload}
	if u := md.Get(mdUsers); u != "" {
		e.users = strings.Split(u, ",")
	}
	if ms, err := strconv.ParseInt(md.Get(mdAt), 10, 64); err == nil {
		e.at = time.UnixMilli(ms)
	}
	e.platform, _ = strconv.Atoi(md.Get(mdPlatform))
	if ns, err := strconv.ParseInt(md.Get(mdSince), 10, 64); err == nil {
		e.since = time.Unix(0, ns)
	}
	if id := md.Get(mdMsgID); id != "" {
		seq, _ := strconv.ParseInt(md.Get(mdSeq), 10, 64)
		e.msg = &ws.MsgRef{ServerMsgID: id, ConversationID: md.Get(mdConv), Seq: seq}
	}
	return e
}
