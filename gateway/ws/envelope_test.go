package ws

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// decodeFrame decodes an encoded frame strictly.
func decodeFrame(t *testing.T, f Frame) (frame, wire.ErrorData) {
	t.Helper()
	var got frame
	if err := json.Unmarshal(f.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var d wire.ErrorData
	_ = json.Unmarshal(got.Data, &d)
	return got, d
}

// TestSendIDOfAnotherUserIsRefused: an envelope send_id naming someone else
// is bad_request and never reaches the handler (issue 15 item 6); the
// connection's own user id, or none, passes.
func TestSendIDOfAnotherUserIsRefused(t *testing.T) {
	s := newTestServer(t, testConfig())
	calls := 0
	s.Handle(wire.ReqGetNewestSeq, func(context.Context, *Conn, json.RawMessage) (any, error) {
		calls++
		return nil, nil
	})
	c := s.newConn("alice", 5, "jti", time.Time{}, "")
	for _, tc := range []struct {
		frame  string
		reason wire.Reason
	}{
		{`{"req_identifier":1001,"msg_incr":"1","send_id":"bob","data":{}}`, wire.ReasonBadRequest},
		{`{"req_identifier":1001,"msg_incr":"2","send_id":7,"data":{}}`, wire.ReasonBadRequest},
		{`{"req_identifier":1001,"msg_incr":"3","send_id":"alice","data":{}}`, ""},
		{`{"req_identifier":1001,"msg_incr":"4","send_id":"","data":{}}`, ""},
		{`{"req_identifier":1001,"msg_incr":"5","data":{}}`, ""},
	} {
		before := calls
		got, d := decodeFrame(t, s.encodeOutcome(s.dispatch(context.Background(), c, []byte(tc.frame), nil)))
		if string(d.Reason) != string(tc.reason) || got.ErrMsg != string(tc.reason) {
			t.Errorf("%s: reason %q, want %q", tc.frame, d.Reason, tc.reason)
		}
		if ran := calls > before; ran != (tc.reason == "") {
			t.Errorf("%s: handler ran = %v", tc.frame, ran)
		}
		if got.ReqIdentifier != wire.ReqGetNewestSeq {
			t.Errorf("%s: answered under %d", tc.frame, got.ReqIdentifier)
		}
	}
}

// TestErrorFramesNameTheClientMsgID: the error answering a request whose
// data carries client_msg_id names it, whatever failed (issue 15 item 8).
func TestErrorFramesNameTheClientMsgID(t *testing.T) {
	s := newTestServer(t, testConfig())
	s.Handle(wire.ReqSendMsg, func(context.Context, *Conn, json.RawMessage) (any, error) {
		return nil, domain.ErrNotGroupMember
	})
	s.Handle(wire.ReqGetNewestSeq, func(context.Context, *Conn, json.RawMessage) (any, error) {
		return nil, errors.New("boom")
	})
	c := s.newConn("alice", 5, "jti", time.Time{}, "")
	for _, tc := range []struct {
		frame, want string
	}{
		{`{"req_identifier":1003,"data":{"client_msg_id":"c-9","session_type":3}}`, "c-9"},
		{`{"req_identifier":1003,"send_id":"bob","data":{"client_msg_id":"c-10"}}`, "c-10"},
		{`{"req_identifier":1999,"data":{"client_msg_id":"c-11"}}`, "c-11"},
		{`{"req_identifier":1003,"data":{"client_msg_id":12}}`, ""},
		{`{"req_identifier":1001,"data":{}}`, ""},
	} {
		f := s.encodeOutcome(s.dispatch(context.Background(), c, []byte(tc.frame), nil))
		got, d := decodeFrame(t, f)
		if got.ErrCode == 0 {
			t.Fatalf("%s: no error", tc.frame)
		}
		if d.ClientMsgID != tc.want {
			t.Errorf("%s: client_msg_id %q, want %q (%s)", tc.frame, d.ClientMsgID, tc.want, f.Bytes())
		}
	}
}

// TestEveryFrameCarriesTs: responses, errors, kicks and pushes all carry the
// server time in Unix milliseconds (issue 15 item 5).
func TestEveryFrameCarriesTs(t *testing.T) {
	before := time.Now().UnixMilli()
	ack, err := EncodeFrame(wire.Response{ReqIdentifier: wire.PushAck, Data: map[string]string{"ack_type": "read"}})
	if err != nil {
		t.Fatal(err)
	}
	fixed, _ := EncodeFrame(wire.Response{ReqIdentifier: wire.PushMsg, Ts: 42})
	frames := map[string]Frame{
		"3001": errorFrame(tokenExpired()),
		"2002": kickFrame(configs.LoginSingle),
		"2101": ack,
	}
	after := time.Now().UnixMilli()
	for name, f := range frames {
		got, _ := decodeFrame(t, f)
		if got.Ts < before || got.Ts > after {
			t.Errorf("%s: ts %d not in [%d, %d]: %s", name, got.Ts, before, after, f.Bytes())
		}
	}
	if got, _ := decodeFrame(t, fixed); got.Ts != 42 {
		t.Errorf("an explicit ts was replaced: %d", got.Ts)
	}
}
