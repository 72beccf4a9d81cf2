package ws

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// TestServerErrorsStripped: a handler failing with a server-side error that
// wraps internal text (the Redis dial error seen in issue 13 #7) answers
// server_busy / internal_error without that text; the frame carries a
// request_id and the server log line with the cause carries the same id.
func TestServerErrorsStripped(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnv(t, testConfig(), func(s *envSettings) {
		s.deps.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	const secret = "dial tcp 127.0.0.1:16390: connect: connection refused"
	e.srv.Handle(reqFail, func(_ context.Context, _ *Conn, data json.RawMessage) (any, error) {
		if strings.Contains(string(data), "busy") {
			return nil, fmt.Errorf("%w: %s", domain.ErrServerBusy, secret)
		}
		return nil, fmt.Errorf("save: %s", secret)
	})
	c := e.dial("alice", 5)
	for _, tc := range []struct {
		data   string
		reason wire.Reason
	}{{`{"k":"busy"}`, wire.ReasonServerBusy}, {`{"k":"other"}`, wire.ReasonInternalError}} {
		c.request(reqFail, "1", tc.data)
		f := c.next()
		var d wire.ErrorData
		if err := json.Unmarshal(f.Data, &d); err != nil {
			t.Fatal(err)
		}
		if f.ErrMsg != string(tc.reason) || d.Reason != tc.reason {
			t.Fatalf("frame %+v data %s, want %s", f, f.Data, tc.reason)
		}
		if strings.Contains(string(f.Data), "dial tcp") || d.Detail != "" {
			t.Fatalf("internal detail leaked: %s", f.Data)
		}
		if !wire.ValidRequestID(d.RequestID) {
			t.Fatalf("no request_id in %s", f.Data)
		}
		waitFor(t, 5e9, "log line with the request id", func() bool {
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "request_id="+d.RequestID) && strings.Contains(line, "dial tcp") {
					return true
				}
			}
			return false
		})
	}
	// A client error keeps its detail and gets no request id.
	c.send(`{"req_identifier":1234,"msg_incr":"2"}`)
	f := c.next()
	var d wire.ErrorData
	_ = json.Unmarshal(f.Data, &d)
	if d.Detail == "" || d.RequestID != "" {
		t.Fatalf("client error: %s", f.Data)
	}
}
