package ws

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hertz-contrib/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// Test request identifiers (outside the public table).
const (
	reqEcho  = 9001 // answers {"echo": data}
	reqFail  = 9002 // fails with the error named by data.err
	reqPanic = 9003 // panics
)

// installTestHandlers registers the handlers the wire tests use.
func installTestHandlers(s *Server) {
	s.Handle(reqEcho, func(_ context.Context, _ *Conn, data json.RawMessage) (any, error) {
		return map[string]json.RawMessage{"echo": data}, nil
	})
	s.Handle(reqFail, func(_ context.Context, _ *Conn, data json.RawMessage) (any, error) {
		var in struct{ Err string }
		_ = json.Unmarshal(data, &in)
		switch in.Err {
		case "not_group_member":
			return nil, fmt.Errorf("send to g1: %w", domain.ErrNotGroupMember)
		case "server_busy":
			return nil, domain.ErrServerBusy
		case "session_invalid":
			return nil, wire.NewError(wire.ReasonSessionInvalid, "")
		default:
			return nil, fmt.Errorf("database exploded")
		}
	})
	s.Handle(reqPanic, func(context.Context, *Conn, json.RawMessage) (any, error) {
		panic("handler bug")
	})
}

func TestRequestResponses(t *testing.T) {
	e := newEnv(t, testConfig())
	installTestHandlers(e.srv)
	c := e.dial("alice", 5)

	cases := []struct {
		name     string
		send     string
		id       int
		msgIncr  string
		opID     string
		errCode  int
		reason   wire.Reason
		wantData string
	}{
		{"echo", `{"req_identifier":9001,"msg_incr":"1","operation_id":"op1","data":{"x":[1,2]}}`, reqEcho, "1", "op1", 0, "", `{"echo":{"x":[1,2]}}`},
		{"absent data is {}", `{"req_identifier":9001,"msg_incr":"2","operation_id":"op2"}`, reqEcho, "2", "op2", 0, "", `{"echo":{}}`},
		{"null data is {}", `{"req_identifier":9001,"msg_incr":"3","data":null}`, reqEcho, "3", "", 0, "", `{"echo":{}}`},
		{"html kept", `{"req_identifier":9001,"msg_incr":"4","data":{"t":"<b>&"}}`, reqEcho, "4", "", 0, "", `{"echo":{"t":"<b>&"}}`},
		{"domain error", `{"req_identifier":9002,"msg_incr":"5","operation_id":"op5","data":{"err":"not_group_member"}}`, reqFail, "5", "op5", 1203, wire.ReasonNotGroupMember, ""},
		{"busy", `{"req_identifier":9002,"msg_incr":"6","data":{"err":"server_busy"}}`, reqFail, "6", "", 1503, wire.ReasonServerBusy, ""},
		{"internal error", `{"req_identifier":9002,"msg_incr":"7","data":{"err":"x"}}`, reqFail, "7", "", 1500, wire.ReasonInternalError, ""},
		{"panic", `{"req_identifier":9003,"msg_incr":"8"}`, reqPanic, "8", "", 1500, wire.ReasonInternalError, ""},
		{"unknown identifier", `{"req_identifier":1234,"msg_incr":"9","operation_id":"op9","data":{}}`, 1234, "9", "op9", 1003, wire.ReasonUnknownRequest, ""},
		{"data not an object", `{"req_identifier":9001,"msg_incr":"10","data":"aGk="}`, reqEcho, "10", "", 1001, wire.ReasonBadRequest, ""},
		{"data an array", `{"req_identifier":9001,"msg_incr":"11","data":[1]}`, reqEcho, "11", "", 1001, wire.ReasonBadRequest, ""},
		{"msg_incr a number", `{"req_identifier":9001,"msg_incr":12,"operation_id":"op12"}`, reqEcho, "", "op12", 1001, wire.ReasonBadRequest, ""},
		{"malformed JSON", `{"req_identifier":9001,`, wire.PushError, "", "", 1001, wire.ReasonBadRequest, ""},
		{"not JSON", `hello`, wire.PushError, "", "", 1001, wire.ReasonBadRequest, ""},
		{"JSON array", `[1,2]`, wire.PushError, "", "", 1001, wire.ReasonBadRequest, ""},
		{"identifier a string", `{"req_identifier":"1003","msg_incr":"13"}`, wire.PushError, "13", "", 1001, wire.ReasonBadRequest, ""},
		{"identifier missing", `{"msg_incr":"14","data":{}}`, wire.PushError, "14", "", 1001, wire.ReasonBadRequest, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.send(tc.send)
			f := c.next()
			if f.ReqIdentifier != tc.id || f.MsgIncr != tc.msgIncr || f.OperationID != tc.opID || f.ErrCode != tc.errCode || f.ErrMsg != string(tc.reason) {
				t.Fatalf("got %+v (data %s), want id %d msg_incr %q op %q err %d %q", f, f.Data, tc.id, tc.msgIncr, tc.opID, tc.errCode, tc.reason)
			}
			if tc.reason != "" && f.reason() != string(tc.reason) {
				t.Fatalf("data.reason = %q, want %q (data %s)", f.reason(), tc.reason, f.Data)
			}
			if tc.wantData != "" && string(f.Data) != tc.wantData {
				t.Fatalf("data = %s, want %s", f.Data, tc.wantData)
			}
		})
	}
	// Every request error kept the connection open.
	c.request(reqEcho, "last", `{}`)
	if f := c.next(); f.MsgIncr != "last" || f.ErrCode != 0 {
		t.Fatalf("after errors: %+v", f)
	}
}

func TestBinaryAndAppPing(t *testing.T) {
	e := newEnv(t, testConfig())
	installTestHandlers(e.srv)
	c := e.dial("alice", 5)
	if err := c.conn.WriteMessage(websocket.BinaryMessage, []byte(`{"req_identifier":9001}`)); err != nil {
		t.Fatal(err)
	}
	if f := c.next(); f.ReqIdentifier != wire.PushError || f.reason() != string(wire.ReasonBadRequest) {
		t.Fatalf("binary frame answered %+v", f)
	}
	c.send("ping")
	if b := c.nextRaw(5 * time.Second); string(b) != "pong" {
		t.Fatalf("app ping answered %q", b)
	}
	c.request(reqEcho, "after", `{}`)
	if f := c.next(); f.MsgIncr != "after" {
		t.Fatalf("after ping: %+v", f)
	}
}

// Responses leave in request order even when handlers take varying time.
func TestResponsesInArrivalOrder(t *testing.T) {
	e := newEnv(t, testConfig())
	var (
		mu   sync.Mutex
		seen []int
	)
	e.srv.Handle(reqEcho, func(ctx context.Context, _ *Conn, data json.RawMessage) (any, error) {
		var in struct{ N int }
		_ = json.Unmarshal(data, &in)
		if in.N%7 == 0 {
			// A slower handler must not let the next request overtake it.
			timer := time.NewTimer(time.Millisecond)
			<-timer.C
		}
		mu.Lock()
		seen = append(seen, in.N)
		mu.Unlock()
		m, _ := MetaFrom(ctx)
		return map[string]any{"n": in.N, "msg_incr": m.MsgIncr}, nil
	})
	c := e.dial("alice", 5)
	const n = 200
	for i := 0; i < n; i++ {
		c.request(reqEcho, strconv.Itoa(i), fmt.Sprintf(`{"n":%d}`, i))
	}
	for i := 0; i < n; i++ {
		f := c.next()
		var d struct {
			N       int    `json:"n"`
			MsgIncr string `json:"msg_incr"`
		}
		if err := json.Unmarshal(f.Data, &d); err != nil || d.N != i || f.MsgIncr != strconv.Itoa(i) || d.MsgIncr != f.MsgIncr {
			t.Fatalf("response %d: %+v data %s", i, f, f.Data)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("handled %d, want %d", len(seen), n)
	}
}

func TestOversizedFrame(t *testing.T) {
	cfg := testConfig()
	cfg.ReadLimit = 1024
	e := newEnv(t, cfg)
	installTestHandlers(e.srv)
	c := e.dial("alice", 5)
	// Exactly at the limit is fine.
	at := `{"req_identifier":9001,"msg_incr":"at","data":{"p":"` + strings.Repeat("x", 1024-55) + `"}}`
	if len(at) != 1024 {
		t.Fatalf("test frame is %d bytes", len(at))
	}
	c.send(at)
	if f := c.next(); f.MsgIncr != "at" || f.ErrCode != 0 {
		t.Fatalf("frame at the limit: %+v", f)
	}
	c.send(`{"req_identifier":9001,"data":{"p":"` + strings.Repeat("x", 2000) + `"}}`)
	f := c.next()
	if f.ReqIdentifier != wire.PushError || f.ErrMsg != string(wire.ReasonBodyTooLong) || f.reason() != string(wire.ReasonBodyTooLong) {
		t.Fatalf("oversized frame answered %+v", f)
	}
	code, text, _ := c.expectClosed(5 * time.Second)
	if code != CloseMessageTooBig || text != string(wire.ReasonBodyTooLong) {
		t.Fatalf("close %d %q, want %d body_too_long", code, text, CloseMessageTooBig)
	}
	// The server is still up.
	c2 := e.dial("alice", 5)
	c2.request(reqEcho, "ok", `{}`)
	if f := c2.next(); f.MsgIncr != "ok" {
		t.Fatalf("new connection: %+v", f)
	}
}

// A handler that answers with a gate reason closes the connection after a
// 3001 frame that echoes the request.
func TestHandlerGateErrorCloses(t *testing.T) {
	e := newEnv(t, testConfig())
	installTestHandlers(e.srv)
	c := e.dial("alice", 5)
	c.send(`{"req_identifier":9002,"msg_incr":"g","operation_id":"opg","data":{"err":"session_invalid"}}`)
	f := c.next()
	if f.ReqIdentifier != wire.PushError || f.MsgIncr != "g" || f.OperationID != "opg" || f.reason() != string(wire.ReasonSessionInvalid) {
		t.Fatalf("got %+v", f)
	}
	if code, text, _ := c.expectClosed(5 * time.Second); code != ClosePolicyViolation || text != "session_invalid" {
		t.Fatalf("close %d %q", code, text)
	}
}

func TestMetricsCount(t *testing.T) {
	e := newEnv(t, testConfig())
	installTestHandlers(e.srv)
	c := e.dial("alice", 5)
	c.request(reqEcho, "1", `{}`)
	c.next()
	if got := testutil.ToFloat64(e.srv.metrics.conns); got != 1 {
		t.Fatalf("connections gauge = %v", got)
	}
	if got := testutil.ToFloat64(e.srv.metrics.framesIn); got != 1 {
		t.Fatalf("frames in = %v", got)
	}
	waitFor(t, 5*time.Second, "frames out", func() bool { return testutil.ToFloat64(e.srv.metrics.framesOut) == 1 })
	n, err := testutil.GatherAndCount(e.metrics)
	if err != nil || n == 0 {
		t.Fatalf("registry gathered %d series: %v", n, err)
	}
}
