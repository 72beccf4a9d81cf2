package main

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/uuid"
)

// target is where a message goes and which connections must receive it.
type target struct {
	conv        string
	sessionType int
	recvID      string
	groupID     string
	recipients  []*conn
}

// expects reports whether c is one of t's recipients.
func (t *target) expects(c *conn) bool {
	for _, r := range t.recipients {
		if r == c {
			return true
		}
	}
	return false
}

// msgRec is everything observed about one message. Times are clock
// offsets in nanoseconds; 0 means "not yet".
type msgRec struct {
	from  *conn
	to    *target
	sched int64 // when it was due (open loop) or sent (closed loop)
	sent  int64
	acked int64 // first answer to the 1003 request
	saved int64 // ACK(saved): the answer itself or the 2101 push
	seq   int64
	srvID string
	ack   string // ack_type of the answer

	expect    int32 // recipients that must receive it
	delivered int32 // recipients that got it by push (or notify-mode pull)
	recovered int32 // recipients that got it by a gap-fill pull
	reason    string
	failed    bool     // a save_failed error push named it
	probe     string   // --search-probe: the word only this message carries
	pic       *picture // --picture-share: the picture it carries (msg_type 102), nil for text
	timedOut  bool
	measured  bool
	finished  bool
	slot      chan struct{} // closed loop: the sender's in-flight slot
}

// recorder collects one run. All state is guarded by mu; connections call
// it from their reader goroutines, senders from theirs.
type recorder struct {
	mu     sync.Mutex
	clk    *clock
	tag    string
	run    uint64 // the run's bits in every client_msg_id (runBits)
	msgs   []*msgRec
	from   int64 // measurement window, clock offsets: messages due in
	to     int64 // [from, to) are measured; events in it count for throughput
	await  string
	low    int                        // msgs[:low] need no timeout check
	pulls  func(c *conn, conv string) // starts a notify-mode pull
	noAcks atomic.Bool                // the server answered 1101 with unknown_request

	hAcc, hSaved, hLag, hDel, hSendDelay, hRecover *latencyHist
	tl                                             timeline

	// --search-probe: every probeEvery-th message is a probe; onProbe
	// starts its search once it is saved (called with mu held: it must not
	// block). hSearch holds ACK(saved)→found.
	probeEvery          int
	onProbe             func(m *msgRec, savedAt int64)
	hSearch             *latencyHist
	probes, probeMisses int64

	win, tot     eventCounts
	errors       map[string]int64
	outstanding  int
	stray        int64
	unexpected   int64
	unavailable  int64
	savedFirst   int64
	dupSavedAcks int64
	resequenced  int64
	// acts tracks --action-share's actions and their notices (nil: off);
	// pics counts --picture-share's checks of pushed pictures.
	acts *actionBook
	pics pictureChecks
	// first and last seq acknowledged per conversation in this run: where
	// notify-mode and gap-fill pulls start and how far they must reach.
	convFirst, convLast map[string]int64
}

type eventCounts struct{ sent, accepted, saved, delivered, pulled, recovered, resent int64 }

// count counts one event at clock reading at: in the run's totals, in the
// measurement window when at falls in it, and in at's second of the
// timeline, which it returns. of picks the event's counter in a set of
// counts.
func (r *recorder) count(at int64, of func(*eventCounts) *int64) *tick {
	*of(&r.tot)++
	if r.inWindow(at) {
		*of(&r.win)++
	}
	t := r.tl.at(at)
	*of(&t.eventCounts)++
	return t
}

// observe records d, a latency of m, in coarse (a second of the timeline;
// nil: none) and, when m is measured, in fine.
func (m *msgRec) observe(coarse *hdrhistogram.Histogram, fine *latencyHist, d int64) {
	if coarse != nil {
		recordCoarse(coarse, d)
	}
	if m.measured {
		fine.record(d)
	}
}

func newRecorder(clk *clock, tag string, from, to int64, await string) *recorder {
	return &recorder{
		clk: clk, tag: tag, run: runBits(tag), from: from, to: to, await: await, errors: map[string]int64{},
		convFirst: map[string]int64{}, convLast: map[string]int64{},
		hAcc: newLatencyHist(), hSaved: newLatencyHist(), hLag: newLatencyHist(), hDel: newLatencyHist(),
		hSendDelay: newLatencyHist(), hRecover: newLatencyHist(), hSearch: newLatencyHist(),
	}
}

// probeWord is the word message clientMsgID carries when it is a search
// probe, "" otherwise: letters and digits only, so every backend's
// tokenizer keeps it whole, and unique to the run and the message.
func (r *recorder) probeWord(clientMsgID string) string {
	if r.probeEvery <= 0 {
		return ""
	}
	id, ok := r.index(clientMsgID)
	if !ok || id%r.probeEvery != 0 {
		return ""
	}
	return "nxq" + r.tag + "q" + strconv.Itoa(id)
}

// recordProbe records a search probe's outcome: found after lag
// nanoseconds from its ACK(saved), or not found in time.
func (r *recorder) recordProbe(m *msgRec, found bool, lag int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probes++
	if !found {
		r.probeMisses++
		return
	}
	m.observe(nil, r.hSearch, lag)
}

func (r *recorder) inWindow(at int64) bool { return at >= r.from && at < r.to }

// runBits is what a run's client_msg_ids carry of its tag: 42 bits of
// its hash, in the UUID's random fields beside the message's index.
func runBits(tag string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(tag))
	return h.Sum64() & (1<<42 - 1)
}

// clientMsgID is a UUIDv7 made now, as the SDK makes them (so the server
// skips its database duplicate lookup as it does for the SDK's sends),
// whose random bits are the run's (runBits) and the message's index (the
// last 32): the recorder finds the record from any frame that names it
// without a map.
func (r *recorder) clientMsgID(id int) string {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[:8], uint64(time.Now().UnixMilli())<<16|0x7000|r.run>>30)
	binary.BigEndian.PutUint64(u[8:], 1<<63|(r.run&(1<<30-1))<<32|uint64(uint32(id)))
	return u.String()
}

// index is the message index in one of this run's client_msg_ids.
func (r *recorder) index(clientMsgID string) (int, bool) {
	u, err := uuid.Parse(clientMsgID)
	if err != nil || len(clientMsgID) != 36 {
		return 0, false
	}
	hi, lo := binary.BigEndian.Uint64(u[:8]), binary.BigEndian.Uint64(u[8:])
	if hi&0xf000 != 0x7000 || lo>>62 != 2 || (hi&0xfff)<<30|(lo>>32&(1<<30-1)) != r.run {
		return 0, false
	}
	return int(uint32(lo)), true
}

func (r *recorder) lookup(clientMsgID string) *msgRec {
	i, ok := r.index(clientMsgID)
	if !ok || i >= len(r.msgs) {
		return nil
	}
	return r.msgs[i]
}

// newMsg registers a message about to be written and returns its
// client_msg_id. sched is when it was due; sent is now.
func (r *recorder) newMsg(from *conn, to *target, sched, sent int64, slot chan struct{}) string {
	expect := int32(0)
	for _, c := range to.recipients {
		if c != from {
			expect++
		}
	}
	m := &msgRec{from: from, to: to, sched: sched, sent: sent, expect: expect, slot: slot,
		measured: sched >= r.from && sched < r.to}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := len(r.msgs)
	r.msgs = append(r.msgs, m)
	cmid := r.clientMsgID(id)
	m.probe = r.probeWord(cmid)
	r.outstanding++
	r.count(sent, func(c *eventCounts) *int64 { return &c.sent })
	m.observe(nil, r.hSendDelay, sent-sched)
	return cmid
}

// writeFailed marks a message whose frame could not be written.
func (r *recorder) writeFailed(clientMsgID string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.lookup(clientMsgID); m != nil {
		r.refuse(m, "write_failed", r.clk.now())
	}
}

func (r *recorder) refuse(m *msgRec, reason string, at int64) {
	if m.reason != "" {
		return
	}
	m.reason = reason
	r.errors[reason]++
	r.tl.at(at).errors++
	r.release(m)
	r.settle(m)
}

// release frees the closed-loop slot of m (once).
func (r *recorder) release(m *msgRec) {
	if m.slot != nil {
		m.slot <- struct{}{}
		m.slot = nil
	}
}

// settle retires m from the outstanding count once nothing more is
// expected of it.
func (r *recorder) settle(m *msgRec) {
	if m.finished {
		return
	}
	done := m.reason != "" || m.failed ||
		(m.acked > 0 && m.saved > 0 && m.delivered+m.recovered >= m.expect)
	if done {
		m.finished = true
		r.outstanding--
	}
}

// onFrame implements frameHandler.
func (r *recorder) onFrame(c *conn, f *inFrame, at int64) {
	d := &f.Data
	switch f.ReqIdentifier {
	case reqSendMsg:
		r.onAnswer(f, at)
	case pushAck:
		if d.AckType == ackSaved {
			r.onSaved(d.ClientMsgID, d.Seq, at)
		}
	case pushMsg:
		r.onShown(c, &d.message, at, true, false)
	case reqEditMsg, reqDeleteMsg, reqReactMsg:
		r.onActionAnswer(f, at)
	case pushGroupNotify:
		if c.recv.startPull(d.ConversationID, d.MaxSeq) && r.pulls != nil {
			r.pulls(c, d.ConversationID)
		}
	case pushError:
		r.mu.Lock()
		defer r.mu.Unlock()
		r.errors[firstNonEmpty(d.Reason, f.ErrMsg, "error_push")]++
		r.tl.at(at).errors++
		if m := r.lookup(d.ClientMsgID); m != nil {
			m.failed = true
			r.release(m)
			r.settle(m)
		}
	case reqMsgAck: // the answer to a delivered ACK: only a failure matters
		switch {
		case f.ErrCode == 0:
		case f.ErrMsg == "unknown_request": // a server without cursors: stop asking
			r.noAcks.Store(true)
		default:
			r.countError("ack_"+firstNonEmpty(f.ErrMsg, strconv.Itoa(f.ErrCode)), at)
		}
	case pushKick:
		r.countError(firstNonEmpty(f.ErrMsg, "kicked"), at)
	default:
		r.countError(firstNonEmpty(f.ErrMsg, "unexpected_frame_"+strconv.Itoa(f.ReqIdentifier)), at)
	}
}

func (r *recorder) countError(reason string, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors[reason]++
	r.tl.at(at).errors++
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// onAnswer handles the response to a 1003: an ACK or an error.
func (r *recorder) onAnswer(f *inFrame, at int64) {
	a := &f.Data
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.lookup(f.MsgIncr)
	if m == nil {
		r.stray++
		return
	}
	if f.ErrCode != 0 {
		r.refuse(m, firstNonEmpty(f.ErrMsg, "error_"+strconv.Itoa(f.ErrCode)), at)
		return
	}
	if m.acked != 0 {
		return
	}
	m.acked, m.seq, m.srvID, m.ack = at, a.Seq, a.ServerMsgID, a.AckType
	if f := r.convFirst[m.to.conv]; f == 0 || a.Seq < f {
		r.convFirst[m.to.conv] = a.Seq
	}
	r.convLast[m.to.conv] = max(r.convLast[m.to.conv], a.Seq)
	if m.from.recv != nil { // the sender holds its own message: its contiguous prefix includes it
		m.from.recv.show(&message{ServerMsgID: a.ServerMsgID, ConversationID: m.to.conv, Seq: a.Seq}, viaOwn, true)
	}
	t := r.count(at, func(c *eventCounts) *int64 { return &c.accepted })
	m.observe(t.acc, r.hAcc, at-m.sched)
	switch {
	case m.saved != 0: // the 2101 push overtook the answer
		r.savedFirst++
		r.recordLag(m, at)
		r.offerTarget(m)
	case a.AckType == ackSaved:
		r.markSaved(m, at)
	}
	if r.await != ackSaved || m.saved != 0 {
		r.release(m)
	}
	r.settle(m)
}

// onSaved handles a 2101 ACK(saved) push.
func (r *recorder) onSaved(clientMsgID string, seq, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.lookup(clientMsgID)
	switch {
	case m == nil && r.acts != nil && strings.HasPrefix(clientMsgID, systemClientMsgIDPrefix):
		r.acts.noticeSaved++ // an action's notice saved: confirmed to the actor
		return
	case m == nil:
		r.stray++
		return
	case m.saved != 0:
		r.dupSavedAcks++
		return
	}
	if m.acked != 0 && seq != 0 && seq != m.seq {
		r.resequenced++ // the save stage gave it another seq than the ACK(accepted) named
	}
	r.markSaved(m, at)
	if m.acked != 0 {
		r.release(m)
	}
	r.settle(m)
}

func (r *recorder) markSaved(m *msgRec, at int64) {
	m.saved = at
	r.count(at, func(c *eventCounts) *int64 { return &c.saved })
	if m.probe != "" && r.onProbe != nil {
		r.onProbe(m, at)
	}
	m.observe(nil, r.hSaved, at-m.sched)
	if m.acked != 0 {
		r.recordLag(m, at)
		r.offerTarget(m)
	}
}

// recordLag records accepted->saved once both are known; 0 when the answer
// itself was ACK(saved) (two-phase off) or came after the saved push.
func (r *recorder) recordLag(m *msgRec, at int64) {
	m.observe(r.tl.at(at).lag, r.hLag, m.saved-m.acked)
}

// expire marks messages unanswered for longer than timeout and frees their
// closed-loop slots, so one lost answer cannot stall a sender forever.
func (r *recorder) expire(now, timeout int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expireActions(now, timeout)
	for i := r.low; i < len(r.msgs); i++ {
		m := r.msgs[i]
		if m.acked != 0 || m.reason != "" {
			if i == r.low {
				r.low++
			}
			continue
		}
		if now-m.sent < timeout {
			break // later messages were sent later
		}
		if !m.timedOut {
			m.timedOut = true
			r.release(m)
		}
	}
}

// progress is a snapshot for the progress line.
type progress struct {
	sent, accepted, saved, delivered, errors int64
	outstanding                              int
}

func (r *recorder) progress() progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs int64
	for _, n := range r.errors {
		errs += n
	}
	return progress{r.tot.sent, r.tot.accepted, r.tot.saved, r.tot.delivered, errs, r.outstanding}
}

// firstSeq is the lowest seq acknowledged in conv during this run (0 when
// none yet).
func (r *recorder) firstSeq(conv string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.convFirst[conv]
}

// lastSeq is the highest seq acknowledged in conv so far.
func (r *recorder) lastSeq(conv string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.convLast[conv]
}
