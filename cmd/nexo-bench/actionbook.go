package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Message actions (docs/actions.md): the WebSocket requests the mix sends
// and the notification msg_types that announce them.
const (
	reqEditMsg   = 1106 // edit {conversation_id, seq, content: {text}}
	reqDeleteMsg = 1108 // delete {conversation_id, seqs, scope}
	reqReactMsg  = 1109 // reaction {conversation_id, seq, emoji, op}

	msgTypePicture = 102
	noticeEdit     = 1601
	noticeReaction = 1602
	noticeDelete   = 1603 // delete for everyone

	// systemClientMsgIDPrefix starts the client_msg_id of a message the
	// server made (a notice); its sender, the actor, gets its 2101.
	systemClientMsgIDPrefix = "sys:"
)

// actionKind is one action of the rotation: its request and its notice.
type actionKind struct {
	name   string
	req    int
	notice int
}

// actionKinds is the rotation: edit, reaction add, delete for everyone.
var actionKinds = []actionKind{
	{"edit", reqEditMsg, noticeEdit},
	{"reaction", reqReactMsg, noticeReaction},
	{"delete", reqDeleteMsg, noticeDelete},
}

func isActionNotice(msgType int) bool { return msgType >= noticeEdit && msgType <= noticeDelete }

// actRec is everything observed about one action. Times are clock
// offsets in nanoseconds; 0 means "not yet".
type actRec struct {
	id       string
	kind     actionKind
	from     *conn
	to       *target
	seq      int64 // the target message's seq
	sched    int64
	sent     int64
	answered int64
	reason   string // the refusal, or write_failed
	timedOut bool
	measured bool
	finished bool
	slot     chan struct{}

	expect    int32          // member connections that must get the notice
	got       map[*conn]bool // connections that were shown a notice of it
	pushed    map[*conn]bool // connections that were pushed one
	dups      int32          // a second push, or a second notice, at one connection
	noticeSeq int64          // the notice's seq in the conversation (from the first shown)
}

// actionBook is the recorder's record of actions, guarded by recorder.mu.
type actionBook struct {
	acts     []*actRec
	byTarget map[convSeq]*actRec // one action per target message
	// targets are each sender connection's saved text messages of a
	// conversation not acted on yet, newest last.
	targets map[targetKey][]*msgRec
	low     int   // acts[:low] need no timeout check
	stray   int64 // notices naming no action of this run
	// noticeSaved counts 2101 ACK(saved) pushes of notices to the actor.
	noticeSaved int64
	hAnswer     *latencyHist
	hNotice     *latencyHist
	sentKind    map[string]int64
}

type targetKey struct {
	from *conn
	conv string
}

func newActionBook() *actionBook {
	return &actionBook{byTarget: map[convSeq]*actRec{}, targets: map[targetKey][]*msgRec{},
		hAnswer: newLatencyHist(), hNotice: newLatencyHist(), sentKind: map[string]int64{}}
}

// offerTarget offers m, once both its answer (its seq) and its ACK(saved)
// are in, to its sender's later actions when it is a text message.
// Called with r.mu held.
func (r *recorder) offerTarget(m *msgRec) {
	if r.acts != nil && m.pic == nil {
		r.acts.addTarget(m)
	}
}

// addTarget offers a saved text message to its sender's later actions.
func (b *actionBook) addTarget(m *msgRec) {
	k := targetKey{m.from, m.to.conv}
	b.targets[k] = append(b.targets[k], m)
}

// take returns c's newest saved message of conv not acted on yet, and
// removes it: every message gets at most one action, so a notice names its
// action by (conversation_id, seq), and no edit or reaction races a delete
// of its message.
func (b *actionBook) take(c *conn, conv string) *msgRec {
	k := targetKey{c, conv}
	ts := b.targets[k]
	if len(ts) == 0 {
		return nil
	}
	m := ts[len(ts)-1]
	b.targets[k] = ts[:len(ts)-1]
	return m
}

// actionID is an action's msg_incr: the run's tag, "-a" and its index.
func (r *recorder) actionID(i int) string { return r.tag + "-a" + strconv.Itoa(i) }

func (r *recorder) lookupAction(id string) *actRec {
	rest, ok := strings.CutPrefix(id, r.tag+"-a")
	if !ok || r.acts == nil {
		return nil
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || i >= len(r.acts.acts) {
		return nil
	}
	return r.acts.acts[i]
}

// sendAction sends an action of kind by c on its newest saved message of
// to not acted on yet; false (nothing sent) when there is none.
func (r *recorder) sendAction(clk *clock, c *conn, to *target, kind actionKind, due int64, slot chan struct{}) bool {
	a := r.newAction(c, to, kind, due, clk.now(), slot)
	if a == nil {
		return false
	}
	var data string
	switch kind.req {
	case reqEditMsg:
		data = fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"content":{"text":"edited by %s"}}`, to.conv, a.seq, a.id)
	case reqReactMsg:
		data = fmt.Sprintf(`{"conversation_id":%q,"seq":%d,"emoji":"👍","op":"add"}`, to.conv, a.seq)
	default:
		data = fmt.Sprintf(`{"conversation_id":%q,"seqs":[%d],"scope":"everyone"}`, to.conv, a.seq)
	}
	b := fmt.Appendf(nil, `{"req_identifier":%d,"msg_incr":%q,"operation_id":%q,"data":%s}`, kind.req, a.id, a.id, data)
	if err := c.writeRaw(b); err != nil {
		r.mu.Lock()
		r.refuseAction(a, "write_failed", clk.now())
		r.mu.Unlock()
	}
	return true
}

// newAction registers an action of kind by c, due at due and sent at now,
// on c's newest saved message of to not acted on yet; nil when there is
// none. Its msg_incr is a.id.
func (r *recorder) newAction(c *conn, to *target, kind actionKind, due, now int64, slot chan struct{}) *actRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.acts.take(c, to.conv)
	if m == nil {
		return nil
	}
	a := &actRec{kind: kind, from: c, to: to, seq: m.seq, sched: due, sent: now, slot: slot,
		measured: due >= r.from && due < r.to, expect: noticeExpect(to, c),
		got: map[*conn]bool{}, pushed: map[*conn]bool{}}
	a.id = r.actionID(len(r.acts.acts))
	r.acts.acts = append(r.acts.acts, a)
	r.acts.byTarget[convSeq{to.conv, m.seq}] = a
	r.acts.sentKind[kind.name]++
	r.outstanding++
	r.count(now, func(c *eventCounts) *int64 { return &c.sent })
	return a
}

// noticeExpect is how many connections must be shown an action's notice:
// every member connection of the conversation, the actor's own included
// (a notice has no origin connection to leave out).
func noticeExpect(to *target, actor *conn) int32 {
	n := int32(len(to.recipients))
	if !to.expects(actor) {
		n++
	}
	return n
}

// refuseAction records an action that failed; called with r.mu held.
func (r *recorder) refuseAction(a *actRec, reason string, at int64) {
	if a.reason != "" {
		return
	}
	a.reason = reason
	r.errors["action_"+reason]++
	r.tl.at(at).errors++
	r.releaseAction(a)
	r.settleAction(a)
}

func (r *recorder) releaseAction(a *actRec) {
	if a.slot != nil {
		a.slot <- struct{}{}
		a.slot = nil
	}
}

func (r *recorder) settleAction(a *actRec) {
	if a.finished {
		return
	}
	if a.reason != "" || a.answered != 0 && int32(len(a.got)) >= a.expect {
		a.finished = true
		r.outstanding--
	}
}

// onActionAnswer handles the answer to a 1106, 1108 or 1109.
func (r *recorder) onActionAnswer(f *inFrame, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.lookupAction(f.MsgIncr)
	if a == nil || a.kind.req != f.ReqIdentifier {
		r.stray++
		return
	}
	if f.ErrCode != 0 {
		r.refuseAction(a, firstNonEmpty(f.ErrMsg, "error_"+strconv.Itoa(f.ErrCode)), at)
		return
	}
	if a.answered != 0 || a.reason != "" {
		return
	}
	a.answered = at
	if a.measured {
		r.acts.hAnswer.record(at - a.sched)
	}
	r.releaseAction(a)
	r.settleAction(a)
}

// noticeRef is what names an action in its notice's content.custom.
type noticeRef struct {
	ConversationID string  `json:"conversation_id"`
	Seq            int64   `json:"seq"`  // 1601, 1602
	Seqs           []int64 `json:"seqs"` // 1603
}

// onNotice handles an action notice shown to c, by a push (byPush) or a
// pull. Called with r.mu held. The notice is the run's own
// traffic: its seq goes through the receiver's duplicate and order checks
// like a message's.
func (r *recorder) onNotice(c *conn, msg *message, at int64, byPush bool) {
	var ref noticeRef
	_ = json.Unmarshal(msg.Content.Custom, &ref)
	seq := ref.Seq
	if len(ref.Seqs) > 0 {
		seq = ref.Seqs[0]
	}
	a := r.acts.byTarget[convSeq{ref.ConversationID, seq}]
	how := viaPull
	if byPush {
		how = viaPush
		if resumed := c.resumedAt.Load(); resumed != 0 && a != nil && a.sent < resumed {
			how = viaResend
		}
	}
	first := c.recv.show(msg, how, a != nil)
	switch {
	case a == nil || a.kind.notice != msg.MsgType:
		if first {
			r.acts.stray++
		}
		return
	case c != a.from && !a.to.expects(c):
		if first && byPush {
			r.unexpected++
		}
		return
	}
	if a.noticeSeq == 0 {
		a.noticeSeq = msg.Seq
	}
	switch {
	case first && !a.got[c]:
		a.got[c] = true
		if a.measured {
			r.acts.hNotice.record(at - a.sched)
		}
	case first: // a second notice of one action: announced twice
		a.dups++
	case how == viaPush && a.pushed[c]: // the same notice pushed twice
		a.dups++
	}
	if how == viaPush {
		a.pushed[c] = true
	}
	r.settleAction(a)
}

// expireActions marks actions unanswered for longer than timeout and
// frees their closed-loop slots. Called with r.mu held.
func (r *recorder) expireActions(now, timeout int64) {
	if r.acts == nil {
		return
	}
	b := r.acts
	for i := b.low; i < len(b.acts); i++ {
		a := b.acts[i]
		if a.answered != 0 || a.reason != "" {
			if i == b.low {
				b.low++
			}
			continue
		}
		if now-a.sent < timeout {
			break
		}
		if !a.timedOut {
			a.timedOut = true
			r.releaseAction(a)
		}
	}
}

// MixCounts are the chat mix's totals (Counts).
type MixCounts struct {
	// Pictures are messages sent as pictures (102); PicturesReceived the
	// pushes and pulls of them whose object metadata matched the upload.
	Pictures         int64 `json:"pictures,omitempty"`
	PicturesReceived int64 `json:"pictures_received,omitempty"`
	// Actions sent (all kinds), by kind, answered without error, refused.
	ActionsSent     int64 `json:"actions_sent,omitempty"`
	ActionsMeasured int64 `json:"actions_measured,omitempty"`
	Edits           int64 `json:"actions_edits,omitempty"`
	Reactions       int64 `json:"actions_reactions,omitempty"`
	Deletes         int64 `json:"actions_deletes,omitempty"`
	ActionsAnswered int64 `json:"actions_answered,omitempty"`
	ActionsRefused  int64 `json:"actions_refused,omitempty"`
	// NoticesExpected: for every answered action, one notice per member
	// connection of its conversation (the actor's included);
	// NoticesReceived: the connections that were shown it.
	NoticesExpected int64 `json:"action_notices_expected,omitempty"`
	NoticesReceived int64 `json:"action_notices_received,omitempty"`
}

// MixCorrectness are the chat mix's correctness counters (Correctness).
type MixCorrectness struct {
	PictureMismatches int64 `json:"picture_mismatches"`
	ActionsUnanswered int64 `json:"actions_unanswered"`
	NoticesMissing    int64 `json:"action_notices_missing"`
	NoticesDuplicate  int64 `json:"action_notices_duplicate"`
	// NoticesStray are notices naming no action of this run
	// (informational).
	NoticesStray int64 `json:"action_notices_stray"`
	// NoticesSavedAcks are the 2101 ACK(saved) pushes the actors got for
	// their actions' notices, the actor being the notice's sender
	// (informational).
	NoticesSavedAcks int64 `json:"action_notice_saved_acks"`
}

func (k MixCorrectness) failures() int64 {
	return k.PictureMismatches + k.ActionsUnanswered + k.NoticesMissing + k.NoticesDuplicate
}

// finishMix adds the mix's counters to res and the notices' seqs to seqs
// (per conversation, for the gap and conflict checks). Called with r.mu
// held.
func (r *recorder) finishMix(res *Result, seqs map[string][]int64) {
	c, k := &res.Counts, &res.Correctness
	c.Pictures, c.PicturesReceived, k.PictureMismatches = r.pics.sent, r.pics.received, r.pics.mismatches
	b := r.acts
	if b == nil {
		return
	}
	c.Edits, c.Reactions, c.Deletes = b.sentKind["edit"], b.sentKind["reaction"], b.sentKind["delete"]
	k.NoticesStray, k.NoticesSavedAcks = b.stray, b.noticeSaved
	for _, a := range b.acts {
		c.ActionsSent++
		if a.measured {
			c.ActionsMeasured++
		}
		if a.noticeSeq != 0 {
			seqs[a.to.conv] = append(seqs[a.to.conv], a.noticeSeq)
		}
		switch {
		case a.reason != "":
			c.ActionsRefused++
			continue
		case a.answered == 0:
			k.ActionsUnanswered++
			continue
		}
		c.ActionsAnswered++
		got := int64(min(int32(len(a.got)), a.expect))
		c.NoticesExpected += int64(a.expect)
		c.NoticesReceived += got
		k.NoticesMissing += int64(a.expect) - got
		k.NoticesDuplicate += int64(a.dups)
	}
}
