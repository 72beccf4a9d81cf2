// Package wstest is a recording ws.Registry for the tests of code that
// pushes to users (the services, through ws.NewPushes): it keeps every
// frame each connection was handed, decoded, and lets a test wait for a
// push with a deadline instead of sleeping. Only tests import it:
//
//	rec := wstest.NewRecorder(wstest.EveryoneOnline)
//	svc := chat.NewPusher(ws.NewPushes(rec, log)) // any code that pushes
//	...
//	p := rec.WaitPush(t, "bob", wire.PushMsg, func(p wstest.Push) bool { return p.Seq() == 7 })
package wstest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
)

// Push is one frame a recorded connection was handed.
type Push struct {
	Conn string         // the connection's ID
	Code int            // req_identifier: wire.PushMsg, wire.PushAck, ...
	Data map[string]any // data as encoding/json decodes it: numbers are float64
}

// Int returns data[key] as an integer, 0 when it is absent or no number.
func (p Push) Int(key string) int64 {
	v, _ := p.Data[key].(float64)
	return int64(v)
}

// Str returns data[key], "" when it is absent or no string.
func (p Push) Str(key string) string {
	v, _ := p.Data[key].(string)
	return v
}

// Seq returns the seq the push is about: data.seq, or data.max_seq of a
// 2102 group summary.
func (p Push) Seq() int64 {
	if p.Code == wire.PushGroupNotify {
		return p.Int("max_seq")
	}
	return p.Int("seq")
}

// Notice returns content.custom of a 2001 push of a notification of
// msgType (a JSON object), or nil when p is anything else.
func (p Push) Notice(msgType domain.MsgType) map[string]any {
	if p.Code != wire.PushMsg || p.Int("msg_type") != int64(msgType) {
		return nil
	}
	c, _ := p.Data["content"].(map[string]any)
	out, _ := c["custom"].(map[string]any)
	return out
}

// Decode decodes f, a response frame, into a Push (Conn left empty). The
// error is a frame that is not a JSON response.
func Decode(f ws.Frame) (Push, error) {
	var r struct {
		ReqIdentifier int            `json:"req_identifier"`
		Data          map[string]any `json:"data"`
	}
	if err := json.Unmarshal(f.Bytes(), &r); err != nil {
		return Push{}, fmt.Errorf("decode frame %.200q: %w", f.Bytes(), err)
	}
	return Push{Code: r.ReqIdentifier, Data: r.Data}, nil
}

// Presence says which users a Recorder has online.
type Presence int

const (
	// OnlyConnected: a user is online on the connections given to Connect,
	// and offline (pushes to them reach nobody) until then.
	OnlyConnected Presence = iota
	// EveryoneOnline: a user never given to Connect is online too, on one
	// connection "<user>/c1".
	EveryoneOnline
)

// WaitTimeout is how long the Wait methods wait before failing the test:
// generous, for a loaded machine.
const WaitTimeout = 15 * time.Second

// Recorder is a ws.Registry that accepts every push to an online user's
// connections and records it, decoded, per user and connection. It is safe
// for concurrent use; every push wakes the Wait methods, which check their
// condition again, so a test waits for what it expects (up to WaitTimeout)
// and never sleeps.
type Recorder struct {
	presence Presence

	mu      sync.Mutex
	conns   map[string][]string // user_id -> connection IDs given to Connect
	got     map[string][]Push   // user_id -> pushes, in arrival order
	changed chan struct{}       // closed, and replaced, at each push
}

var _ ws.Registry = (*Recorder)(nil)

// NewRecorder returns a Recorder with no pushes, which has users online as
// presence says.
func NewRecorder(presence Presence) *Recorder {
	return &Recorder{presence: presence, conns: map[string][]string{}, got: map[string][]Push{}, changed: make(chan struct{})}
}

// Connect puts user online on connIDs (added to any given before), or on
// "<user>/c1" when none are given.
func (r *Recorder) Connect(user string, connIDs ...string) {
	if len(connIDs) == 0 {
		connIDs = []string{user + "/c1"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns[user] = append(r.conns[user], connIDs...)
}

// connsOf returns user's connections; r.mu is held.
func (r *Recorder) connsOf(user string) []string {
	if c, ok := r.conns[user]; ok || r.presence == OnlyConnected {
		return c
	}
	return []string{user + "/c1"}
}

// record adds p for each of user's connections that want selects and
// returns how many; r.mu is held.
func (r *Recorder) record(user string, p Push, want func(conn string) bool) int {
	n := 0
	for _, c := range r.connsOf(user) {
		if want(c) {
			p.Conn = c
			r.got[user] = append(r.got[user], p)
			n++
		}
	}
	if n > 0 {
		close(r.changed)
		r.changed = make(chan struct{})
	}
	return n
}

func mustDecode(f ws.Frame) Push {
	p, err := Decode(f)
	if err != nil {
		// A frame the server could not have sent: a bug in the code under test.
		panic("wstest: " + err.Error())
	}
	return p
}

// PushToUser records f for every connection of userID but exceptConn and
// returns how many that is.
func (r *Recorder) PushToUser(ctx context.Context, userID string, f ws.Frame, exceptConn string) int {
	return r.PushToUsers(ctx, []string{userID}, f, exceptConn)
}

// PushToUsers is PushToUser for each of userIDs, decoding f once.
func (r *Recorder) PushToUsers(_ context.Context, userIDs []string, f ws.Frame, exceptConn string) int {
	p := mustDecode(f)
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range userIDs {
		n += r.record(u, p, func(c string) bool { return c != exceptConn })
	}
	return n
}

// PushToConn records f for connID when it is one of userID's connections.
func (r *Recorder) PushToConn(_ context.Context, userID, connID string, f ws.Frame) bool {
	p := mustDecode(f)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.record(userID, p, func(c string) bool { return c == connID }) > 0
}

// Online reports whether userID has a connection.
func (r *Recorder) Online(userID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.connsOf(userID)) > 0
}

// ConnCount is the number of connections given to Connect.
func (r *Recorder) ConnCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.conns {
		n += len(c)
	}
	return n
}

// Pushes returns a copy of user's pushes so far, in arrival order.
func (r *Recorder) Pushes(user string) []Push {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Push(nil), r.got[user]...)
}

// PushesOf returns user's pushes with identifier code so far, in arrival
// order.
func (r *Recorder) PushesOf(user string, code int) []Push {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Push
	for _, p := range r.got[user] {
		if p.Code == code {
			out = append(out, p)
		}
	}
	return out
}

// Notices returns the content.custom of user's 2001 pushes of
// notifications of msgType so far, in arrival order (see Push.Notice).
func (r *Recorder) Notices(user string, msgType domain.MsgType) []map[string]any {
	return notices(r.PushesOf(user, wire.PushMsg), msgType)
}

func notices(ps []Push, msgType domain.MsgType) []map[string]any {
	var out []map[string]any
	for _, p := range ps {
		if n := p.Notice(msgType); n != nil {
			out = append(out, n)
		}
	}
	return out
}

// Reset forgets every recorded push (connections stay).
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = map[string][]Push{}
}

// WaitFor returns user's pushes with identifier code as soon as cond holds
// over them, checking now and after each push; it fails t, naming what,
// when WaitTimeout passes first.
func (r *Recorder) WaitFor(t testing.TB, user string, code int, what string, cond func([]Push) bool) []Push {
	t.Helper()
	deadline := time.NewTimer(WaitTimeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		changed := r.changed // taken before the check: a push after it closes this one
		r.mu.Unlock()
		got := r.PushesOf(user, code)
		if cond(got) {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%s: timed out after %v waiting for %s (has %d pushes %d: %+v)", user, WaitTimeout, what, len(got), code, got)
		}
	}
}

// WaitPush returns the first of user's pushes with identifier code that
// match accepts, waiting for it as WaitFor does.
func (r *Recorder) WaitPush(t testing.TB, user string, code int, match func(Push) bool) Push {
	t.Helper()
	var found Push
	r.WaitFor(t, user, code, fmt.Sprintf("matching %d push", code), func(ps []Push) bool {
		for _, p := range ps {
			if match(p) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// WaitNotices waits as WaitFor does until user has n notices of msgType
// (see Notices) and returns them all.
func (r *Recorder) WaitNotices(t testing.TB, user string, msgType domain.MsgType, n int) []map[string]any {
	t.Helper()
	var got []map[string]any
	r.WaitFor(t, user, wire.PushMsg, fmt.Sprintf("%d notices %d", n, msgType), func(ps []Push) bool {
		got = notices(ps, msgType)
		return len(got) >= n
	})
	return got
}
