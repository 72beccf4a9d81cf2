package main

import (
	"encoding/json"
	"testing"
)

// These tests feed the recorder synthetic frames: a harness whose
// counters cannot go above zero would pass every healthy run and prove
// nothing, so each anomaly is shown to be counted.

func testWorld(t *testing.T) (*recorder, *conn, *conn, *target) {
	t.Helper()
	clk := newClock()
	rec := newRecorder(clk, "tst", 0, 1<<62, ackAccepted)
	snd := &conn{user: "a", recv: newReceiver()}
	rcv := &conn{user: "b", recv: newReceiver()}
	to := &target{conv: singleConversationID("a", "b"), sessionType: sessionSingle, recvID: "b", recipients: []*conn{rcv}}
	return rec, snd, rcv, to
}

// ackData is the data of a 1003 response and of a 2101 push: ack_type
// "accepted" (in the stream, saved later) or "saved" (in the database).
type ackData struct {
	AckType        string `json:"ack_type"`
	ServerMsgID    string `json:"server_msg_id"`
	ClientMsgID    string `json:"client_msg_id"`
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	SendAt         int64  `json:"send_at"`
}

// decodeFrame turns v into JSON and back through the reader's decoder, so
// the tests exercise the same single-pass decode as a live connection.
func decodeFrame(t *testing.T, code int, msgIncr string, data any) *inFrame {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(frame{ReqIdentifier: code, MsgIncr: msgIncr, Data: b})
	if err != nil {
		t.Fatal(err)
	}
	f := new(inFrame)
	if err := json.Unmarshal(raw, f); err != nil {
		t.Fatal(err)
	}
	return f
}

func ackFrame(t *testing.T, code int, cmid, ackType string, seq int64) *inFrame {
	return decodeFrame(t, code, cmid, ackData{AckType: ackType, ClientMsgID: cmid, ServerMsgID: "srv-" + cmid, ConversationID: "si_a_b", Seq: seq})
}

func pushFrame(t *testing.T, cmid, srvID string, seq int64) *inFrame {
	return decodeFrame(t, pushMsg, "", map[string]any{"client_msg_id": cmid, "server_msg_id": srvID, "conversation_id": "si_a_b",
		"seq": seq, "status": "normal", "content": map[string]string{"text": "hi"}})
}

// step is one synthetic event: message i's answer, saved push, or a push
// to the receiver.
type step struct {
	kind string // "ack", "saved", "push", "ack_saved", "error"
	msg  int
	seq  int64
	srv  string // push: server_msg_id (default srv-<cmid>)
}

func TestRecorderCountsAnomalies(t *testing.T) {
	cases := []struct {
		name  string
		msgs  int
		steps []step
		check func(t *testing.T, r Result)
	}{
		{"healthy two-phase", 2, []step{{"ack", 0, 1, ""}, {"ack", 1, 2, ""}, {"saved", 0, 1, ""}, {"push", 0, 1, ""}, {"saved", 1, 2, ""}, {"push", 1, 2, ""}},
			func(t *testing.T, r Result) {
				if !r.OK || r.Correctness.failures() != 0 || r.Latency.Lag.Count != 2 || r.Latency.Delivery.Count != 2 {
					t.Fatalf("healthy run judged %+v", r)
				}
			}},
		{"two-phase off answers saved", 1, []step{{"ack_saved", 0, 1, ""}, {"push", 0, 1, ""}},
			func(t *testing.T, r Result) {
				if !r.OK || r.Counts.AckSaved != 1 || r.Latency.Saved.Count != 1 || r.Latency.Lag.Count != 1 {
					t.Fatalf("got %+v", r.Counts)
				}
			}},
		{"never saved", 1, []step{{"ack", 0, 1, ""}, {"push", 0, 1, ""}},
			func(t *testing.T, r Result) { want(t, r.Correctness.LostUnsaved, 1, "lost_unsaved") }},
		{"never delivered", 1, []step{{"ack", 0, 1, ""}, {"saved", 0, 1, ""}},
			func(t *testing.T, r Result) { want(t, r.Correctness.LostDeliveries, 1, "lost_deliveries") }},
		{"never answered", 1, nil,
			func(t *testing.T, r Result) { want(t, r.Correctness.Unanswered, 1, "unanswered") }},
		{"raw duplicate push", 1, []step{{"ack", 0, 1, ""}, {"saved", 0, 1, ""}, {"push", 0, 1, ""}, {"push", 0, 1, ""}},
			func(t *testing.T, r Result) {
				want(t, r.Correctness.DuplicatesRaw, 1, "duplicates_raw")
				want(t, r.Correctness.DuplicatesDeduped, 0, "duplicates_after_dedupe")
			}},
		{"same message under two seqs", 1, []step{{"ack", 0, 1, ""}, {"saved", 0, 1, ""}, {"push", 0, 1, ""}, {"push", 0, 2, ""}},
			func(t *testing.T, r Result) { want(t, r.Correctness.DuplicatesDeduped, 1, "duplicates_after_dedupe") }},
		{"two messages on one seq", 2, []step{{"ack", 0, 1, ""}, {"ack", 1, 1, ""}, {"saved", 0, 1, ""}, {"saved", 1, 1, ""}, {"push", 0, 1, ""}, {"push", 1, 1, ""}},
			func(t *testing.T, r Result) {
				want(t, r.Correctness.SeqConflicts, 2, "seq_conflicts (one from the ACKs, one at the receiver)")
				want(t, r.Correctness.LostDeliveries, 1, "lost_deliveries (dedupe hides the second)")
			}},
		{"pushes out of order", 2, []step{{"ack", 0, 1, ""}, {"ack", 1, 2, ""}, {"saved", 0, 1, ""}, {"saved", 1, 2, ""}, {"push", 1, 2, ""}, {"push", 0, 1, ""}},
			func(t *testing.T, r Result) { want(t, r.Correctness.ReordersReceiver, 1, "reorders_receiver") }},
		{"seqs against send order", 2, []step{{"ack", 0, 2, ""}, {"ack", 1, 1, ""}, {"saved", 0, 2, ""}, {"saved", 1, 1, ""}, {"push", 1, 1, ""}, {"push", 0, 2, ""}},
			func(t *testing.T, r Result) { want(t, r.Correctness.ReordersSender, 1, "reorders_sender") }},
		{"a hole in the seqs", 2, []step{{"ack", 0, 1, ""}, {"ack", 1, 3, ""}, {"saved", 0, 1, ""}, {"saved", 1, 3, ""}, {"push", 0, 1, ""}, {"push", 1, 3, ""}},
			func(t *testing.T, r Result) { want(t, r.Correctness.SeqGaps, 1, "seq_gaps") }},
		{"another seq at save", 1, []step{{"ack", 0, 1, ""}, {"saved", 0, 5, ""}, {"push", 0, 1, ""}},
			func(t *testing.T, r Result) { want(t, r.Correctness.Resequenced, 1, "resequenced") }},
		{"refused", 1, []step{{"error", 0, 0, ""}},
			func(t *testing.T, r Result) {
				want(t, r.Errors["server_busy"], 1, "errors[server_busy]")
				if r.OK {
					t.Fatal("a refused message must fail the run")
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, snd, rcv, to := testWorld(t)
			ids := make([]string, tc.msgs)
			for i := range ids {
				ids[i] = rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil)
			}
			for _, s := range tc.steps {
				at := rec.clk.now()
				switch s.kind {
				case "ack":
					rec.onFrame(snd, ackFrame(t, reqSendMsg, ids[s.msg], ackAccepted, s.seq), at)
				case "ack_saved":
					rec.onFrame(snd, ackFrame(t, reqSendMsg, ids[s.msg], ackSaved, s.seq), at)
				case "saved":
					rec.onFrame(snd, ackFrame(t, pushAck, ids[s.msg], ackSaved, s.seq), at)
				case "push":
					rec.onFrame(rcv, pushFrame(t, ids[s.msg], firstNonEmpty(s.srv, "srv-"+ids[s.msg]), s.seq), at)
				case "error":
					f := decodeFrame(t, reqSendMsg, ids[s.msg], map[string]string{"reason": "server_busy"})
					f.ErrCode, f.ErrMsg = 1503, "server_busy"
					rec.onFrame(snd, f, at)
				}
			}
			tc.check(t, rec.finish([]*conn{snd, rcv}))
		})
	}
}

func want(t *testing.T, got, wantN int64, what string) {
	t.Helper()
	if got != wantN {
		t.Fatalf("%s = %d, want %d", what, got, wantN)
	}
}

// TestPercentilesNeverExceedMax: HDR answers the top of a bucket, which
// can lie above the largest value recorded; the summary clamps to it.
func TestPercentilesNeverExceedMax(t *testing.T) {
	h := newLatencyHist()
	for _, ns := range []int64{1_000_000, 2_000_000, 2_008_067_000} {
		h.record(ns)
	}
	s := h.summary()
	if s.Count != 3 || s.Max != 2008.067 || s.P999 > s.Max || s.P99 > s.Max {
		t.Fatalf("summary %+v", s)
	}
}

// TestReceiverContiguousPrefix: delivered ACKs report the prefix without
// holes, once each.
func TestReceiverContiguousPrefix(t *testing.T) {
	r := newReceiver()
	show := func(seq int64, how via) {
		r.show(&message{ConversationID: "c", Seq: seq, ServerMsgID: "s" + string(rune('a'+seq))}, how, true)
	}
	show(5, viaPush)
	show(6, viaPush)
	show(8, viaPush)
	if got := r.dueAcks()["c"]; got != 6 {
		t.Fatalf("prefix %d, want 6 (8 is past the hole at 7)", got)
	}
	show(7, viaOwn) // the connection's own message fills the hole
	if got := r.dueAcks()["c"]; got != 8 {
		t.Fatalf("prefix %d, want 8", got)
	}
	if again := r.dueAcks(); len(again) != 0 {
		t.Fatalf("acknowledged twice: %v", again)
	}
}

// TestResendAfterReconnect: pushes to a reconnected session of messages
// sent before it came back are recovered, and repeating one is a resent
// duplicate, not a raw duplicate or a reorder.
func TestResendAfterReconnect(t *testing.T) {
	rec, snd, rcv, to := testWorld(t)
	ids := []string{
		rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil),
		rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil),
	}
	for i, id := range ids {
		rec.onFrame(snd, ackFrame(t, reqSendMsg, id, ackAccepted, int64(i+1)), rec.clk.now())
		rec.onFrame(snd, ackFrame(t, pushAck, id, ackSaved, int64(i+1)), rec.clk.now())
	}
	rec.onFrame(rcv, pushFrame(t, ids[0], "srv-"+ids[0], 1), rec.clk.now()) // live, before the drop
	rcv.resumedAt.Store(rec.clk.now() + 1)                                  // the session came back
	rec.onFrame(rcv, pushFrame(t, ids[1], "srv-"+ids[1], 2), rec.clk.now()) // resent: recovered
	rec.onFrame(rcv, pushFrame(t, ids[0], "srv-"+ids[0], 1), rec.clk.now()) // resent again: a resent duplicate
	r := rec.finish([]*conn{snd, rcv})
	if !r.OK || r.Counts.Recovered != 1 || r.Counts.RecoveredByResend != 1 || r.Counts.Delivered != 1 || r.Correctness.ResentDuplicates != 1 {
		t.Fatalf("counts %+v correctness %+v", r.Counts, r.Correctness)
	}
}

// TestForeignRepeatsAreNotHeldAgainstTheServer: a message that is not the
// run's (a group's creation notice, pushed live and again by the resend at
// connect) is deduped but its repeat is not a raw duplicate, and its order
// is not checked against the run's messages.
func TestForeignRepeatsAreNotHeldAgainstTheServer(t *testing.T) {
	rec, snd, rcv, to := testWorld(t)
	id := rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil)
	rec.onFrame(snd, ackFrame(t, reqSendMsg, id, ackAccepted, 2), rec.clk.now())
	rec.onFrame(snd, ackFrame(t, pushAck, id, ackSaved, 2), rec.clk.now())
	rec.onFrame(rcv, pushFrame(t, id, "srv-"+id, 2), rec.clk.now())
	notice := pushFrame(t, "", "srv-notice", 1)
	rec.onFrame(rcv, notice, rec.clk.now()) // older seq after ours: not a reorder
	rec.onFrame(rcv, notice, rec.clk.now()) // again: not a raw duplicate
	r := rec.finish([]*conn{snd, rcv})
	if !r.OK || r.Correctness.DuplicatesRaw != 0 || r.Correctness.ReordersReceiver != 0 || r.Correctness.ResentDuplicates != 1 {
		t.Fatalf("correctness %+v", r.Correctness)
	}
}
