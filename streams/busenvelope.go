package streams

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/nexo-im/nexo/domain"
)

// Metadata keys of a bus message. Small values only: they travel as
// redisstream metadata (msgpack) and NATS headers. User IDs cannot contain
// commas (domain.ValidID), so a list is comma-joined.
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
	// A push's message (domain.MsgRef), so the receiving instance audits
	// each connection's push: server_msg_id, conversation_id, seq.
	mdMsgID = "msg_id"
	mdConv  = "conv"
	mdSeq   = "seq"
)

// BusEnvelope is one inbox message: its kind (the relay's: a push, several
// pushes, a session event), its recipients and, for a push, the frame
// bytes exactly as the publisher encoded them (Payload). Zero fields are
// not sent.
type BusEnvelope struct {
	Kind     string
	Users    []string
	Except   string    // a connection the push skips (the sender's)
	At       time.Time // when published: the receiver drops old envelopes
	From     string    // the publishing instance's incarnation
	Platform int
	JTI      string
	Since    time.Time // when the kicking connection registered
	Reason   string
	Detail   string
	Msg      *domain.MsgRef // a push's message, when its frame was tagged
	Payload  []byte
}

func (e *BusEnvelope) message() *message.Message {
	m := message.NewMessage(watermill.NewULID(), e.Payload)
	md := m.Metadata
	md.Set(mdKind, e.Kind)
	md.Set(mdUsers, strings.Join(e.Users, ","))
	md.Set(mdAt, strconv.FormatInt(e.At.UnixMilli(), 10))
	md.Set(mdFrom, e.From)
	if e.Except != "" {
		md.Set(mdExcept, e.Except)
	}
	if e.Platform != 0 {
		md.Set(mdPlatform, strconv.Itoa(e.Platform))
	}
	if e.JTI != "" {
		md.Set(mdJTI, e.JTI)
	}
	if !e.Since.IsZero() {
		md.Set(mdSince, strconv.FormatInt(e.Since.UnixNano(), 10))
	}
	if e.Reason != "" {
		md.Set(mdReason, e.Reason)
		md.Set(mdDetail, e.Detail)
	}
	if e.Msg != nil {
		md.Set(mdMsgID, e.Msg.ServerMsgID)
		md.Set(mdConv, e.Msg.ConversationID)
		md.Set(mdSeq, strconv.FormatInt(e.Msg.Seq, 10))
	}
	return m
}

func parseBusEnvelope(m *message.Message) BusEnvelope {
	md := m.Metadata
	e := BusEnvelope{Kind: md.Get(mdKind), Except: md.Get(mdExcept), From: md.Get(mdFrom), JTI: md.Get(mdJTI),
		Reason: md.Get(mdReason), Detail: md.Get(mdDetail), Payload: m.Payload}
	if u := md.Get(mdUsers); u != "" {
		e.Users = strings.Split(u, ",")
	}
	if ms, err := strconv.ParseInt(md.Get(mdAt), 10, 64); err == nil {
		e.At = time.UnixMilli(ms)
	}
	e.Platform, _ = strconv.Atoi(md.Get(mdPlatform))
	if ns, err := strconv.ParseInt(md.Get(mdSince), 10, 64); err == nil {
		e.Since = time.Unix(0, ns)
	}
	if id := md.Get(mdMsgID); id != "" {
		seq, _ := strconv.ParseInt(md.Get(mdSeq), 10, 64)
		e.Msg = &domain.MsgRef{ServerMsgID: id, ConversationID: md.Get(mdConv), Seq: seq}
	}
	return e
}

// BusPush is one push carried between instances: a frame for some users,
// except one connection, tagged with its message for the audit.
type BusPush struct {
	Users  []string
	Except string
	Msg    *domain.MsgRef
	Frame  []byte
}

// ErrBadPushes: a payload that DecodeBusPushes cannot read.
var ErrBadPushes = errors.New("malformed pushes envelope")

// EncodeBusPushes is the payload of an envelope of several pushes: per
// push, its users (comma-joined), except, server_msg_id, conversation_id,
// seq and frame; strings and the frame length-prefixed (uvarint), seq a
// varint.
func EncodeBusPushes(items []BusPush) []byte {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, it := range items {
		str(strings.Join(it.Users, ","))
		str(it.Except)
		var ref domain.MsgRef
		if it.Msg != nil {
			ref = *it.Msg
		}
		str(ref.ServerMsgID)
		str(ref.ConversationID)
		b = binary.AppendVarint(b, ref.Seq)
		b = binary.AppendUvarint(b, uint64(len(it.Frame)))
		b = append(b, it.Frame...)
	}
	return b
}

// DecodeBusPushes reverses EncodeBusPushes; a payload it cannot read is
// ErrBadPushes, never a part of its pushes.
func DecodeBusPushes(b []byte) ([]BusPush, error) {
	var out []BusPush
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, ErrBadPushes
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		var f [4][]byte
		for i := range f {
			v, err := next()
			if err != nil {
				return nil, err
			}
			f[i] = v
		}
		seq, k := binary.Varint(b)
		if k <= 0 {
			return nil, ErrBadPushes
		}
		b = b[k:]
		frame, err := next()
		if err != nil {
			return nil, err
		}
		it := BusPush{Except: string(f[1]), Frame: frame}
		if len(f[0]) > 0 {
			it.Users = strings.Split(string(f[0]), ",")
		}
		if len(f[2]) > 0 {
			it.Msg = &domain.MsgRef{ServerMsgID: string(f[2]), ConversationID: string(f[3]), Seq: seq}
		}
		out = append(out, it)
	}
	return out, nil
}
