package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store/storetest"
)

// frame is a server frame as a client sees it.
type frame struct {
	ReqIdentifier int             `json:"req_identifier"`
	MsgIncr       string          `json:"msg_incr"`
	OperationID   string          `json:"operation_id"`
	ErrCode       int             `json:"err_code"`
	ErrMsg        string          `json:"err_msg"`
	Data          json.RawMessage `json:"data"`
}

func (f frame) field(key string) any {
	var m map[string]any
	_ = json.Unmarshal(f.Data, &m)
	return m[key]
}

// wsClient speaks the public protocol to a server under test: requests wait
// for their response by msg_incr; pushes collect per identifier.
type wsClient struct {
	t      *testing.T
	conn   *websocket.Conn
	userID string
	token  string
	incr   atomic.Int64

	mu      sync.Mutex
	waiting map[string]chan frame
	pushes  map[int][]frame
	changed chan struct{}
	closed  chan struct{}
	err     error // why reading stopped (set before closed is closed)
}

// user registers userID (password "plum-tart-9") and logs in on platform 5.
// testPassword is the password user registers with (not a common one:
// registration refuses those).
const testPassword = "plum-tart-9"

func user(t *testing.T, base, userID string) string {
	t.Helper()
	if code, env := call(t, "POST", base+"/user/register", fmt.Sprintf(`{"user_id":%q,"nickname":"n","password":%q}`, userID, testPassword), ""); code != 200 {
		t.Fatalf("register %s: %d %v", userID, code, env)
	}
	code, env := call(t, "POST", base+"/auth/login", fmt.Sprintf(`{"user_id":%q,"password":%q,"platform_id":5}`, userID, testPassword), "")
	if code != 200 {
		t.Fatalf("login %s: %d %v", userID, code, env)
	}
	return dataField(env, "token")
}

func dial(t *testing.T, base, userID, token string) *wsClient {
	t.Helper()
	return dialURL(t, base, "/ws?platform_id=5&send_id="+userID+"&token="+token, userID, token)
}

func dialURL(t *testing.T, base, path, userID, token string) *wsClient {
	t.Helper()
	url := strings.Replace(base, "http://", "ws://", 1) + path
	conn, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": []string{base}})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (HTTP %d)", userID, err, status)
	}
	c := &wsClient{t: t, conn: conn, userID: userID, token: token, waiting: map[string]chan frame{},
		pushes: map[int][]frame{}, changed: make(chan struct{}, 1), closed: make(chan struct{})}
	go c.read()
	t.Cleanup(func() { _ = conn.Close() })
	return c
}

func (c *wsClient) read() {
	defer close(c.closed)
	for {
		_, raw, err := c.conn.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		var f frame
		if json.Unmarshal(raw, &f) != nil {
			continue
		}
		c.mu.Lock()
		if ch, ok := c.waiting[f.MsgIncr]; ok && f.ReqIdentifier < 2000 {
			delete(c.waiting, f.MsgIncr)
			ch <- f
		} else {
			c.pushes[f.ReqIdentifier] = append(c.pushes[f.ReqIdentifier], f)
		}
		c.mu.Unlock()
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
}

// request sends a frame and waits for its response.
func (c *wsClient) request(id int, data any) frame {
	c.t.Helper()
	incr := fmt.Sprint(c.incr.Add(1))
	ch := make(chan frame, 1)
	c.mu.Lock()
	c.waiting[incr] = ch
	c.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"req_identifier": id, "msg_incr": incr, "operation_id": "op-" + incr, "data": data})
	if err := c.conn.WriteMessage(websocket.TextMessage, body); err != nil {
		c.t.Fatalf("%s: write: %v", c.userID, err)
	}
	select {
	case f := <-ch:
		return f
	case <-time.After(10 * time.Second):
		c.t.Fatalf("%s: no response to %d within 10s", c.userID, id)
	}
	return frame{}
}

// send sends a text message to recv over WS 1003 and returns the response.
func (c *wsClient) send(recv, clientMsgID, text string) frame {
	c.t.Helper()
	return c.request(1003, map[string]any{"client_msg_id": clientMsgID, "session_type": 1, "recv_id": recv,
		"msg_type": 101, "content": map[string]any{"text": text}})
}

// waitPushes waits until cond holds over the pushes of identifier id.
func (c *wsClient) waitPushes(id int, what string, cond func([]frame) bool) []frame {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		got := append([]frame(nil), c.pushes[id]...)
		c.mu.Unlock()
		if cond(got) {
			return got
		}
		select {
		case <-c.changed:
		case <-deadline:
			c.t.Fatalf("%s: timed out waiting for %s (have %d frames of %d)", c.userID, what, len(got), id)
		}
	}
}

// realConfig is a configuration on the test MariaDB and Redis, with a key
// prefix and database of the test's own and fast timings.
func realConfig(t testing.TB) configs.Config {
	t.Helper()
	cfg := configs.Default()
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.MySQL.DSN = storetest.MySQLDSN(t)
	rdb, prefix := storetest.Redis(t)
	cfg.Redis.Addr = rdb.Options().Addr
	cfg.Redis.KeyPrefix = prefix
	cfg.JWT.Secret = validSecret
	cfg.Auth.BcryptCost = 4
	cfg.WS.RateLimit = 0
	cfg.Streams.Shards = 2
	cfg.Streams.Block = 100 * time.Millisecond
	cfg.Streams.ClaimMinIdle = 500 * time.Millisecond
	cfg.Streams.ConsumerName = storetest.RandomName("node-")
	cfg.Admin.Token = "admin-token"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// readErr is why the connection's reading stopped (nil while open).
func (c *wsClient) readErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
