package main

import "sync"

// convSeq names one message position: what clients dedupe on.
type convSeq struct {
	conv string
	seq  int64
}

// receiver is one connection's view of what it was given, for the
// correctness counters. It deliberately does not dedupe before counting:
// every push is checked against what came before.
type receiver struct {
	mu     sync.Mutex
	seen   map[convSeq]shown // what each (conversation_id, seq) was shown as
	bySrv  map[string]int64  // server_msg_id -> seq it was first shown with
	maxSeq map[string]int64  // highest seq shown per conversation (pushes and pulls)
	pushed map[string]int64  // highest seq pushed per conversation (order check)

	dupRaw     int64            // pushes repeating a (conversation_id, seq) already shown
	dupDeduped int64            // the same message shown again under another seq: survives dedupe
	conflicts  int64            // another message on a (conversation_id, seq) already shown
	reorders   int64            // a push with a lower seq than an earlier push of its conversation
	resentDup  int64            // a reconnect's resend of what the session already had (informational)
	contig     map[string]int64 // highest seq up to which everything was shown, per conversation
	acked      map[string]int64 // what 1101 delivered ACKs have reported
	pulling    map[string]bool
	notifyMax  map[string]int64
}

// shown is the first message shown at a position and how it came.
type shown struct {
	srvID  string
	byPush bool
}

func newReceiver() *receiver {
	return &receiver{
		seen: map[convSeq]shown{}, bySrv: map[string]int64{}, maxSeq: map[string]int64{},
		pushed: map[string]int64{}, pulling: map[string]bool{}, notifyMax: map[string]int64{},
		contig: map[string]int64{}, acked: map[string]int64{},
	}
}

// via is how a message reached a connection.
type via int

const (
	viaPush   via = iota // a live 2001 push
	viaResend            // a 2001 push to a reconnected session of a message sent before it reconnected
	viaPull              // read by a pull (notify mode or gap fill)
	viaOwn               // the connection sent it (known from its ACK)
)

// show records m as shown to the user and returns whether it is new at
// this connection (the first time its (conversation_id, seq) appears).
// Only a live push repeating a push counts as a raw duplicate, and only
// live pushes are checked for order: pulls overlap pushes by design, and a
// reconnect's resend repeats what the cursor had not yet acknowledged.
// Messages that are not the run's own (server notifications, earlier
// traffic, which a session's resend may push again at connect) are
// tracked for dedupe but their repeats and order are not held against the
// server.
func (r *receiver) show(m *message, how via, ours bool) (first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := convSeq{m.ConversationID, m.Seq}
	if prev, ok := r.seen[k]; ok {
		switch {
		case how == viaOwn: // the ACKs are checked for conflicts already
		case prev.srvID != m.ServerMsgID:
			r.conflicts++
		case how == viaResend || !ours:
			r.resentDup++
		case how == viaPush && prev.byPush:
			r.dupRaw++
		}
		return false
	}
	if m.ServerMsgID != "" {
		if s, ok := r.bySrv[m.ServerMsgID]; ok && s != m.Seq {
			r.dupDeduped++
		} else if !ok {
			r.bySrv[m.ServerMsgID] = m.Seq
		}
	}
	r.seen[k] = shown{m.ServerMsgID, how == viaPush || how == viaResend}
	if how == viaPush && ours {
		if m.Seq < r.pushed[m.ConversationID] {
			r.reorders++
		}
		r.pushed[m.ConversationID] = max(r.pushed[m.ConversationID], m.Seq)
	}
	if how != viaOwn {
		r.maxSeq[m.ConversationID] = max(r.maxSeq[m.ConversationID], m.Seq)
	}
	r.advance(m.ConversationID, m.Seq)
	return true
}

// advance moves conv's contiguous prefix: the first seq shown in a run is
// its base, and the prefix grows while the next seq is held.
func (r *receiver) advance(conv string, seq int64) {
	c, ok := r.contig[conv]
	if !ok {
		c = seq - 1
	}
	for {
		if _, held := r.seen[convSeq{conv, c + 1}]; !held {
			break
		}
		c++
	}
	r.contig[conv] = c
}

// dueAcks returns, per conversation, the contiguous prefix not yet
// acknowledged to the server (1101 delivered), and marks it acknowledged.
func (r *receiver) dueAcks() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out map[string]int64
	for conv, c := range r.contig {
		if c > r.acked[conv] {
			if out == nil {
				out = map[string]int64{}
			}
			out[conv], r.acked[conv] = c, c
		}
	}
	return out
}

// highest returns the highest seq shown in conv (0 when none).
func (r *receiver) highest(conv string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxSeq[conv]
}

// has reports whether (conv, seq) was shown.
func (r *receiver) has(conv string, seq int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.seen[convSeq{conv, seq}]
	return ok
}

// counts returns the anomaly counters.
func (r *receiver) counts() (dupRaw, dupDeduped, conflicts, reorders, resentDup int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dupRaw, r.dupDeduped, r.conflicts, r.reorders, r.resentDup
}

// startPull marks conv as being pulled up to maxSeq; false when a pull is
// already running (it will pick the new maximum up when it finishes).
func (r *receiver) startPull(conv string, maxSeq int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notifyMax[conv] = max(r.notifyMax[conv], maxSeq)
	if r.pulling[conv] {
		return false
	}
	r.pulling[conv] = true
	return true
}

// pullTarget returns how far conv must be pulled now that everything up
// to done was read, and ends the pull (false) when nothing more was
// announced.
func (r *receiver) pullTarget(conv string, done int64) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	target := r.notifyMax[conv]
	if done >= target {
		r.pulling[conv] = false
		return 0, false
	}
	return target, true
}

// abortPull ends a pull that failed or found nothing new; the next notify
// starts another.
func (r *receiver) abortPull(conv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pulling[conv] = false
}

// firstMissing returns the first seq of [from, to] in conv that was not
// shown, or 0 when all were (or the range is empty).
func (r *receiver) firstMissing(conv string, from, to int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := max(from, 1); s <= to; s++ {
		if _, ok := r.seen[convSeq{conv, s}]; !ok {
			return s
		}
	}
	return 0
}
