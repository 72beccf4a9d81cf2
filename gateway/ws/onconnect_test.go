package ws

import (
	"context"
	"testing"
	"time"

	"github.com/nexo-im/nexo/gateway/wire"
)

// TestOnConnectRunsOncePerConnectionWithItsContext: the hook runs after the
// connection is registered, can push to it, and its context ends when the
// connection closes.
func TestOnConnectRunsOncePerConnectionWithItsContext(t *testing.T) {
	ended := make(chan struct{})
	hook := func(ctx context.Context, c *Conn) {
		f, err := EncodeFrame(wire.Response{ReqIdentifier: wire.PushGroupNotify, Data: map[string]any{"hello": c.UserID()}})
		if err != nil {
			t.Error(err)
		}
		c.Send(f)
		<-ctx.Done()
		close(ended)
	}
	e := newEnv(t, testConfig(), func(s *envSettings) { s.deps.OnConnect = hook })
	c := e.dial("hana", 5)
	f := c.next()
	if f.ReqIdentifier != wire.PushGroupNotify {
		t.Fatalf("first frame %+v, want the hook's push", f)
	}
	c.conn.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the hook's context did not end with the connection")
	}
}
