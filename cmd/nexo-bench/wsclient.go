package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bytedance/sonic"
	"github.com/gorilla/websocket"
)

// frameDecoder decodes the server's frames: sonic with encoding/json's
// behaviour (ConfigStd), at about a quarter of its CPU. In a closed loop
// decoding was a third of the harness's CPU, and on a shared 2-core
// machine what the harness spends the server does not get.
var frameDecoder = sonic.ConfigStd

// frameHandler gets every frame a connection reads that is not the answer
// to a request made with conn.request: send ACKs and pushes. at is the
// receive time on the run's clock. Called from the connection's reader
// goroutine, so frames of one connection arrive in order.
type frameHandler interface {
	onFrame(c *conn, f *inFrame, at int64)
}

// conn is one WebSocket session of one user on one platform: one reader
// goroutine, and writes serialised by a mutex (gorilla allows one
// concurrent writer).
type conn struct {
	idx      int
	user     string
	platform int
	token    string
	// base is the instance this session connects to (scheme://host:port);
	// "" leaves the choice to api.wsURL.
	base string

	wmu sync.Mutex
	ws  *websocket.Conn

	handler frameHandler
	clk     *clock
	recv    *receiver // receive-side bookkeeping (dedupe, order)

	incr    atomic.Uint64
	pmu     sync.Mutex
	pending map[string]chan *inFrame

	// closedAt is when the reader saw the session end (clock offset; 0
	// while open): the cluster step times session events by it.
	closedAt atomic.Int64

	// resumedAt is when a reconnected session came back (clock offset; 0
	// for a first session): pushes of messages sent before it are resends.
	resumedAt atomic.Int64

	done      chan struct{} // closed when the reader exits
	closeMu   sync.Mutex
	closeWhy  string
	pongs     chan struct{}
	writeWait time.Duration
}

// dialer is shared by all connections. Small buffers: the bench may hold
// ten thousand idle connections, and frames are a few hundred bytes.
var dialer = websocket.Dialer{
	Proxy:            nil,
	HandshakeTimeout: 10 * time.Second,
	ReadBufferSize:   2048,
	WriteBufferSize:  2048,
}

// dial opens the session of c (its token must be set) and starts its reader.
// A refused handshake is an *apiError with the server's reason.
func (c *conn) dial(ctx context.Context, a *api) error {
	ws, resp, err := dialer.DialContext(ctx, a.wsURL(c), nil)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			var env envelope
			if json.Unmarshal(body, &env) == nil && env.ErrMsg != "" {
				return &apiError{Status: resp.StatusCode, Code: env.ErrCode, Reason: env.ErrMsg}
			}
			return &apiError{Status: resp.StatusCode, Reason: "handshake_" + strconv.Itoa(resp.StatusCode), Detail: http.StatusText(resp.StatusCode)}
		}
		return fmt.Errorf("dial %s: %w", c.user, err)
	}
	ws.SetReadLimit(16 << 20)
	c.wmu.Lock()
	c.ws = ws
	c.done = make(chan struct{})
	c.pongs = make(chan struct{}, 1)
	if c.writeWait == 0 {
		c.writeWait = 10 * time.Second
	}
	c.wmu.Unlock()
	c.closeMu.Lock()
	c.closeWhy = ""
	c.closeMu.Unlock()
	c.closedAt.Store(0)
	c.pmu.Lock()
	if c.pending == nil {
		c.pending = map[string]chan *inFrame{}
	}
	c.pmu.Unlock()
	ws.SetPongHandler(func(string) error {
		select {
		case c.pongs <- struct{}{}:
		default:
		}
		return nil
	})
	go c.readLoop(ws, c.done)
	return nil
}

func (c *conn) readLoop(ws *websocket.Conn, done chan struct{}) {
	defer close(done)
	for {
		_, raw, err := ws.ReadMessage()
		if err != nil {
			if c.clk != nil {
				c.closedAt.Store(c.clk.now())
			}
			c.setClosed(closeReason(err))
			c.failPending()
			return
		}
		at := c.clk.now()
		f := new(inFrame)
		if err := frameDecoder.Unmarshal(raw, f); err != nil {
			c.handler.onFrame(c, &inFrame{ReqIdentifier: -1, ErrMsg: "bad_frame"}, at)
			continue
		}
		if f.MsgIncr != "" && f.ReqIdentifier < 2000 && f.MsgIncr[0] == 'r' {
			c.pmu.Lock()
			ch, ok := c.pending[f.MsgIncr]
			delete(c.pending, f.MsgIncr)
			c.pmu.Unlock()
			if ok {
				ch <- f
				continue
			}
		}
		c.handler.onFrame(c, f, at)
	}
}

// closeReason names why a session ended: the close frame's reason text
// (the server puts the wire reason there), else a transport class.
func closeReason(err error) string {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		if ce.Text != "" {
			return ce.Text
		}
		return "close_" + strconv.Itoa(ce.Code)
	}
	return "connection_lost"
}

func (c *conn) setClosed(why string) {
	c.closeMu.Lock()
	if c.closeWhy == "" {
		c.closeWhy = why
	}
	c.closeMu.Unlock()
}

// closedWhy returns why the session ended, or "" while it is open.
func (c *conn) closedWhy() string {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	return c.closeWhy
}

// alive reports whether the reader is still running.
func (c *conn) alive() bool {
	if c.done == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

func (c *conn) failPending() {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	for k, ch := range c.pending {
		close(ch)
		delete(c.pending, k)
	}
}

// write sends one frame. Safe for concurrent use.
func (c *conn) write(f *frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.ws == nil {
		return errors.New("not connected")
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.writeWait))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// request sends a frame with a fresh msg_incr and waits for its answer.
// A response with err_code != 0 is an *apiError carrying the reason.
func (c *conn) request(ctx context.Context, code int, data any) (*inData, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	id := "r" + strconv.FormatUint(c.incr.Add(1), 10)
	ch := make(chan *inFrame, 1)
	c.pmu.Lock()
	c.pending[id] = ch
	c.pmu.Unlock()
	if err := c.write(&frame{ReqIdentifier: code, MsgIncr: id, OperationID: id, Data: b}); err != nil {
		c.pmu.Lock()
		delete(c.pending, id)
		c.pmu.Unlock()
		return nil, err
	}
	select {
	case f, ok := <-ch:
		if !ok {
			return nil, errors.New("connection closed")
		}
		if f.ErrCode != 0 {
			return nil, &apiError{Code: f.ErrCode, Reason: f.ErrMsg}
		}
		return &f.Data, nil
	case <-ctx.Done():
		c.pmu.Lock()
		delete(c.pending, id)
		c.pmu.Unlock()
		return nil, ctx.Err()
	}
}

// pull reads a window of a conversation over this session (1005).
func (c *conn) pull(ctx context.Context, p pullData) (pullResult, error) {
	d, err := c.request(ctx, reqPullMsgRange, p)
	if err != nil {
		return pullResult{}, err
	}
	return pullResult{Messages: d.Messages, MinSeq: d.MinSeq, MaxSeq: d.MaxSeq}, nil
}

// ping sends a WebSocket ping and waits for the pong: a transport-level
// proof that the session is alive at both ends.
func (c *conn) ping(ctx context.Context) error {
	select { // drop a stale pong
	case <-c.pongs:
	default:
	}
	if err := c.ws.WriteControl(websocket.PingMessage, []byte("nexo-bench"), time.Now().Add(c.writeWait)); err != nil {
		return err
	}
	select {
	case <-c.pongs:
		return nil
	case <-c.done:
		return errors.New("connection closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close ends the session politely (close frame) and waits for the reader
// to exit (bounded).
func (c *conn) close() {
	if c.ws == nil {
		return
	}
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bench done"), time.Now().Add(time.Second))
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
	}
	_ = c.ws.Close()
	<-c.done
}

// drop cuts the TCP connection without a close frame, as a client losing
// its network would: the server learns of it only from the failed read.
func (c *conn) drop() {
	if c.ws == nil {
		return
	}
	c.setClosed("dropped_by_bench")
	_ = c.ws.NetConn().Close()
	<-c.done
}
