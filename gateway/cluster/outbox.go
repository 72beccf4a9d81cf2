package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/store"
)

// The outbox batches remote pushes: PushToUsers delivers to local
// connections at once and queues the rest; one flusher takes everything
// queued (up to outboxBatch items), looks up the recipients' instances
// once (pipelined) and publishes one envelope per target instance carrying
// all of that instance's frames. Under load a batch holds what the deliver
// and save stages pushed during the previous flush, so the Redis round
// trips per message fall with the rate; when idle each push flushes alone,
// at once. The rule (docs/cluster.md): one envelope per target
// instance per batch.

const (
	// outboxSize bounds the queue; a push that finds it full is routed
	// synchronously, as before batching.
	outboxSize = 16384
	// outboxBatch bounds one flush.
	outboxBatch = 512
	// kindPushes is an envelope of several pushes (payload: encodePushes).
	kindPushes = "pushes"
)

// pushItem is one queued push: a frame for some users, except one
// connection, tagged with its message for the audit.
type pushItem struct {
	users  []string
	except string
	msg    *ws.MsgRef
	frame  []byte
}

// flushLoop publishes queued pushes until ctx ends, then publishes what is
// still queued (bounded by the stop timeout) and returns.
func (r *Router) flushLoop(ctx context.Context) {
	batch := make([]pushItem, 0, outboxBatch)
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			for {
				batch = r.take(batch[:0])
				if len(batch) == 0 || dctx.Err() != nil {
					cancel()
					return
				}
				r.flush(dctx, batch)
			}
		case it := <-r.out:
			batch = append(batch[:0], it)
			batch = r.take(batch)
			r.flush(ctx, batch)
		}
	}
}

// take appends what is queued now to batch, up to outboxBatch items.
func (r *Router) take(batch []pushItem) []pushItem {
	for len(batch) < outboxBatch {
		select {
		case it := <-r.out:
			batch = append(batch, it)
		default:
			return batch
		}
	}
	return batch
}

// flush routes batch: one presence lookup for every recipient, one
// envelope per target instance.
func (r *Router) flush(ctx context.Context, batch []pushItem) {
	var users []string
	index := map[string]int{}
	for _, it := range batch {
		for _, u := range it.users {
			if _, ok := index[u]; !ok {
				index[u] = len(users)
				users = append(users, u)
			}
		}
	}
	at, err := r.presence.InstancesOf(ctx, users)
	if err != nil {
		r.m.errors.WithLabelValues("presence").Inc()
		r.log.Warn("cluster: presence lookup failed; remote recipients will catch up by resend and pull", "users", len(users), "err", err)
		return
	}
	self := r.membership.Incarnation()
	perInstance := map[string][]pushItem{}
	for _, it := range batch {
		// The item's users, split by the instance holding them.
		var split map[string][]string
		for _, u := range it.users {
			for _, in := range at[index[u]] {
				if in == self {
					continue
				}
				if split == nil {
					split = make(map[string][]string, 2)
				}
				split[in] = append(split[in], u)
			}
		}
		for in, us := range split {
			part := it
			part.users = us
			perInstance[in] = append(perInstance[in], part)
		}
	}
	r.m.batch.Observe(float64(len(batch)))
	for in, items := range perInstance {
		id, _, _ := store.ParseIncarnation(in)
		r.publish(ctx, id, envelope{kind: kindPushes, payload: encodePushes(items)})
	}
}

// encodePushes lays items out as, per item: users (comma-joined), except,
// server_msg_id, conversation_id, seq, frame; strings and the frame
// length-prefixed (uvarint), seq a varint.
func encodePushes(items []pushItem) []byte {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, it := range items {
		str(strings.Join(it.users, ","))
		str(it.except)
		var ref ws.MsgRef
		if it.msg != nil {
			ref = *it.msg
		}
		str(ref.ServerMsgID)
		str(ref.ConversationID)
		b = binary.AppendVarint(b, ref.Seq)
		b = binary.AppendUvarint(b, uint64(len(it.frame)))
		b = append(b, it.frame...)
	}
	return b
}

var errBadPushes = errors.New("malformed pushes envelope")

// decodePushes reverses encodePushes.
func decodePushes(b []byte) ([]pushItem, error) {
	var out []pushItem
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, errBadPushes
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
			return nil, errBadPushes
		}
		b = b[k:]
		frame, err := next()
		if err != nil {
			return nil, err
		}
		it := pushItem{except: string(f[1]), frame: frame}
		if len(f[0]) > 0 {
			it.users = strings.Split(string(f[0]), ",")
		}
		if len(f[2]) > 0 {
			it.msg = &ws.MsgRef{ServerMsgID: string(f[2]), ConversationID: string(f[3]), Seq: seq}
		}
		out = append(out, it)
	}
	return out, nil
}
