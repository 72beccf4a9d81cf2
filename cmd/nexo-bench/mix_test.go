package main

import (
	"fmt"
	"testing"
)

// noticeFrame is a 2001 push of an action notice of msgType at seq,
// naming the message at target.
func noticeFrame(t *testing.T, msgType int, seq, target int64) *inFrame {
	custom := map[string]any{"conversation_id": "si_a_b", "seq": target}
	if msgType == noticeDelete {
		custom = map[string]any{"conversation_id": "si_a_b", "seqs": []int64{target}, "scope": "everyone"}
	}
	return decodeFrame(t, pushMsg, "", map[string]any{"client_msg_id": fmt.Sprintf("sys-%d", seq), "server_msg_id": fmt.Sprintf("srv-n%d", seq),
		"conversation_id": "si_a_b", "seq": seq, "status": "normal", "msg_type": msgType, "content": map[string]any{"custom": custom}})
}

// TestActionNoticesCounted: an action's notice must reach every member
// connection (the actor's included) exactly once; a missing, a repeated
// and a second notice of one action each count as a failure, and the
// notices' seqs close the gaps between the messages' seqs.
func TestActionNoticesCounted(t *testing.T) {
	cases := []struct {
		name             string
		shows            func(rec *recorder, snd, rcv *conn)
		missing, dup, ok bool
	}{
		{"healthy", func(rec *recorder, snd, rcv *conn) {
			rec.onFrame(snd, noticeFrame(t, noticeEdit, 2, 1), rec.clk.now())
			rec.onFrame(rcv, noticeFrame(t, noticeEdit, 2, 1), rec.clk.now())
		}, false, false, true},
		{"missing at the receiver", func(rec *recorder, snd, rcv *conn) {
			rec.onFrame(snd, noticeFrame(t, noticeEdit, 2, 1), rec.clk.now())
		}, true, false, false},
		{"pushed twice", func(rec *recorder, snd, rcv *conn) {
			rec.onFrame(snd, noticeFrame(t, noticeEdit, 2, 1), rec.clk.now())
			rec.onFrame(rcv, noticeFrame(t, noticeEdit, 2, 1), rec.clk.now())
			rec.onFrame(rcv, noticeFrame(t, noticeEdit, 2, 1), rec.clk.now())
		}, false, true, false},
		{"announced twice", func(rec *recorder, snd, rcv *conn) {
			rec.onFrame(snd, noticeFrame(t, noticeEdit, 2, 1), rec.clk.now())
			rec.onFrame(rcv, noticeFrame(t, noticeEdit, 2, 1), rec.clk.now())
			rec.onFrame(rcv, noticeFrame(t, noticeEdit, 3, 1), rec.clk.now())
		}, false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, snd, rcv, to := testWorld(t)
			rec.acts = newActionBook()
			id := rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil)
			rec.onFrame(snd, ackFrame(t, reqSendMsg, id, ackSaved, 1), rec.clk.now())
			rec.onFrame(rcv, pushFrame(t, id, "srv-"+id, 1), rec.clk.now())
			a := rec.newAction(snd, to, actionKinds[0], rec.clk.now(), rec.clk.now(), nil)
			if a == nil || a.seq != 1 || a.expect != 2 {
				t.Fatalf("action %+v", a)
			}
			if rec.newAction(snd, to, actionKinds[1], rec.clk.now(), rec.clk.now(), nil) != nil {
				t.Fatal("a message was acted on twice")
			}
			rec.onFrame(snd, decodeFrame(t, reqEditMsg, a.id, map[string]any{"conversation_id": "si_a_b", "seq": 1}), rec.clk.now())
			tc.shows(rec, snd, rcv)
			r := rec.finish([]*conn{snd, rcv})
			c, k := r.Counts, r.Correctness
			if r.OK != tc.ok || (k.NoticesMissing != 0) != tc.missing || (k.NoticesDuplicate != 0) != tc.dup ||
				c.ActionsSent != 1 || c.ActionsAnswered != 1 || c.NoticesExpected != 2 || c.Edits != 1 {
				t.Fatalf("ok %v counts %+v correctness %+v", r.OK, c.MixCounts, k.MixCorrectness)
			}
			if tc.ok && k.SeqGaps != 0 {
				t.Fatalf("seq gaps %d: the notice's seq was not counted", k.SeqGaps)
			}
		})
	}
}

// TestUnansweredActionFails: an action never answered is a failure, and
// a refused one an error.
func TestUnansweredActionFails(t *testing.T) {
	rec, snd, rcv, to := testWorld(t)
	rec.acts = newActionBook()
	for i := range 2 {
		id := rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil)
		rec.onFrame(snd, ackFrame(t, reqSendMsg, id, ackSaved, int64(i+1)), rec.clk.now())
		rec.onFrame(rcv, pushFrame(t, id, "srv-"+id, int64(i+1)), rec.clk.now())
	}
	rec.newAction(snd, to, actionKinds[2], rec.clk.now(), rec.clk.now(), nil)
	refused := rec.newAction(snd, to, actionKinds[1], rec.clk.now(), rec.clk.now(), nil)
	f := decodeFrame(t, reqReactMsg, refused.id, nil)
	f.ErrCode, f.ErrMsg = 1400, "message_gone"
	rec.onFrame(snd, f, rec.clk.now())
	r := rec.finish([]*conn{snd, rcv})
	if r.OK || r.Correctness.ActionsUnanswered != 1 || r.Counts.ActionsRefused != 1 || r.Errors["action_message_gone"] != 1 {
		t.Fatalf("ok %v counts %+v correctness %+v errors %v", r.OK, r.Counts.MixCounts, r.Correctness.MixCorrectness, r.Errors)
	}
}

// TestPictureChecked: a pushed picture must carry its object's reference
// with the uploaded metadata.
func TestPictureChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		image any
		ok    bool
	}{
		{"matching", map[string]any{"object_id": "o1", "size": 90, "content_type": "image/png"}, true},
		{"another object", map[string]any{"object_id": "o2", "size": 90, "content_type": "image/png"}, false},
		{"no metadata", map[string]any{"object_id": "o1"}, false},
		{"a URL", "https://example.com/x.png", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, snd, rcv, to := testWorld(t)
			id := rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil)
			rec.setPicture(id, &picture{objectID: "o1", size: 90, contentType: "image/png"})
			rec.onFrame(snd, ackFrame(t, reqSendMsg, id, ackSaved, 1), rec.clk.now())
			rec.onFrame(rcv, decodeFrame(t, pushMsg, "", map[string]any{"client_msg_id": id, "server_msg_id": "srv-" + id,
				"conversation_id": "si_a_b", "seq": 1, "status": "normal", "msg_type": msgTypePicture,
				"content": map[string]any{"image": tc.image}}), rec.clk.now())
			r := rec.finish([]*conn{snd, rcv})
			if r.OK != tc.ok || (r.Counts.PicturesReceived == 1) != tc.ok || r.Counts.Pictures != 1 {
				t.Fatalf("ok %v counts %+v correctness %+v", r.OK, r.Counts.MixCounts, r.Correctness.MixCorrectness)
			}
		})
	}
}

// TestActionTargetsNeedTheirSeq: a message whose ACK(saved) overtook its
// answer becomes a target only once the answer names its seq, and a
// picture never does (an edit needs text).
func TestActionTargetsNeedTheirSeq(t *testing.T) {
	rec, snd, _, to := testWorld(t)
	rec.acts = newActionBook()
	pic := rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil)
	rec.setPicture(pic, &picture{objectID: "o1"})
	rec.onFrame(snd, ackFrame(t, reqSendMsg, pic, ackSaved, 1), rec.clk.now())
	id := rec.newMsg(snd, to, rec.clk.now(), rec.clk.now(), nil)
	rec.onFrame(snd, ackFrame(t, pushAck, id, ackSaved, 2), rec.clk.now())
	if a := rec.newAction(snd, to, actionKinds[0], rec.clk.now(), rec.clk.now(), nil); a != nil {
		t.Fatalf("acted on seq %d before any answer", a.seq)
	}
	rec.onFrame(snd, ackFrame(t, reqSendMsg, id, ackAccepted, 2), rec.clk.now())
	if a := rec.newAction(snd, to, actionKinds[0], rec.clk.now(), rec.clk.now(), nil); a == nil || a.seq != 2 {
		t.Fatalf("action %+v, want one on seq 2", a)
	}
	if a := rec.newAction(snd, to, actionKinds[1], rec.clk.now(), rec.clk.now(), nil); a != nil {
		t.Fatalf("acted on the picture at seq %d", a.seq)
	}
}
