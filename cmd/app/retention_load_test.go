package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// retWindow is one measurement window of the retention benchmark: the
// sends made in it (by send time) and their latencies in microseconds.
type retWindow struct {
	cleaner  bool // the cleaner was let run during the window
	from, to time.Time
	ack      *hdrhistogram.Histogram // send → ACK (the answer to WS 1003)
	lag      *hdrhistogram.Histogram // ACK(accepted) → 2101 ACK(saved), two-phase only
}

func newRetWindow(cleaner bool) *retWindow {
	return &retWindow{cleaner: cleaner, ack: hdrhistogram.New(1, 60_000_000, 3), lag: hdrhistogram.New(1, 60_000_000, 3)}
}

// ms returns the q-th percentile (0–100) of h in milliseconds.
func ms(h *hdrhistogram.Histogram, q float64) float64 {
	return float64(h.ValueAtQuantile(q)) / 1000
}

// retMsg is one message of the load: when it was written, answered and
// (two-phase) saved, and the window it counts in (nil: none).
type retMsg struct {
	w                     *retWindow
	sentAt, ackAt, saveAt time.Time
}

// retLoad is the retention benchmark's open-loop load: single-chat texts
// over WebSocket (WS 1003), one connection per user, each user writing to
// the next. A send is timed from its write to its answer; on the two-phase
// path the 2101 ACK(saved) that follows gives the accepted → saved lag.
type retLoad struct {
	b        *testing.B
	twoPhase bool
	conns    []*websocket.Conn
	users    []string
	cur      atomic.Pointer[retWindow] // where a send made now counts (nil: nowhere)

	mu                 sync.Mutex
	msgs               map[string]*retMsg // by client_msg_id (also the frame's msg_incr)
	sent, acked, saved int
	failed             []string // the first refusals, for the report
	failures           int
	maxLate            time.Duration // the pacer's worst delay behind its schedule
	readErrs           []error
	progress           chan struct{}
}

// dialRetLoad opens one session per user (tokens[i] is users[i]'s).
func dialRetLoad(b *testing.B, base string, users, tokens []string, twoPhase bool) *retLoad {
	b.Helper()
	l := &retLoad{b: b, twoPhase: twoPhase, users: users, msgs: map[string]*retMsg{}, progress: make(chan struct{}, 1)}
	for i, u := range users {
		url := strings.Replace(base, "http://", "ws://", 1) + "/ws?platform_id=5&send_id=" + u + "&token=" + tokens[i]
		conn, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": []string{base}})
		if err != nil {
			b.Fatalf("dial %s: %v", u, err)
		}
		b.Cleanup(func() { _ = conn.Close() })
		l.conns = append(l.conns, conn)
		go l.read(conn)
	}
	return l
}

// read takes the frames of one session: the answers to its sends and its
// 2101 ACK(saved) pushes; deliveries (2001) to it are read and dropped.
func (l *retLoad) read(conn *websocket.Conn) {
	for {
		_, raw, err := conn.ReadMessage()
		at := time.Now()
		if err != nil {
			l.mu.Lock()
			l.readErrs = append(l.readErrs, err)
			l.mu.Unlock()
			return
		}
		var f struct {
			ReqIdentifier int    `json:"req_identifier"`
			MsgIncr       string `json:"msg_incr"`
			ErrCode       int    `json:"err_code"`
			ErrMsg        string `json:"err_msg"`
			Data          struct {
				AckType     string `json:"ack_type"`
				ClientMsgID string `json:"client_msg_id"`
			} `json:"data"`
		}
		if f.ReqIdentifier = peekIdentifier(raw); f.ReqIdentifier != 1003 && f.ReqIdentifier != 2101 {
			continue
		}
		if json.Unmarshal(raw, &f) != nil {
			continue
		}
		l.mu.Lock()
		switch {
		case f.ReqIdentifier == 1003:
			m := l.msgs[f.MsgIncr]
			if m == nil || !m.ackAt.IsZero() {
				break
			}
			m.ackAt = at
			if f.ErrCode != 0 {
				delete(l.msgs, f.MsgIncr) // refused: no ACK(saved) follows
				l.failures++
				if len(l.failed) < 5 {
					l.failed = append(l.failed, fmt.Sprintf("%s: %d %s", f.MsgIncr, f.ErrCode, f.ErrMsg))
				}
				break
			}
			l.acked++
			if f.Data.AckType == "saved" { // the synchronous path (or two-phase failing open)
				m.saveAt, l.saved = at, l.saved+1
			}
			if m.w != nil {
				_ = m.w.ack.RecordValue(max(1, at.Sub(m.sentAt).Microseconds()))
			}
			l.recordLag(m)
			l.forgetDone(f.MsgIncr, m)
		case f.Data.AckType == "saved":
			m := l.msgs[f.Data.ClientMsgID]
			if m == nil || !m.saveAt.IsZero() {
				break
			}
			m.saveAt, l.saved = at, l.saved+1
			l.recordLag(m)
			l.forgetDone(f.Data.ClientMsgID, m)
		}
		l.mu.Unlock()
		select {
		case l.progress <- struct{}{}:
		default:
		}
	}
}

// peekIdentifier reads req_identifier without decoding the frame: most
// frames are deliveries the load does not look at.
func peekIdentifier(raw []byte) int {
	const key = `"req_identifier":`
	i := strings.Index(string(raw[:min(len(raw), 64)]), key)
	if i < 0 {
		return 0
	}
	n := 0
	for _, c := range raw[i+len(key):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// forgetDone drops a message answered and saved (l.mu held): what it
// measured is in its window's histograms and the counters, and keeping
// millions of them would grow the heap that the server in this process
// collects with it, a cost that rises through the run for both kinds of
// window alike.
func (l *retLoad) forgetDone(id string, m *retMsg) {
	if !m.ackAt.IsZero() && !m.saveAt.IsZero() {
		delete(l.msgs, id)
	}
}

// recordLag records ACK(accepted) → ACK(saved) once both arrived on the
// two-phase path (l.mu held). A 2101 that overtook its answer counts 0.
func (l *retLoad) recordLag(m *retMsg) {
	if !l.twoPhase || m.w == nil || m.ackAt.IsZero() || m.saveAt.IsZero() {
		return
	}
	_ = m.w.lag.RecordValue(max(1, m.saveAt.Sub(m.ackAt).Microseconds()))
}

// run sends rate messages a second until stop is closed, each on the
// schedule (open loop: a slow answer does not delay the next send).
func (l *retLoad) run(rate int, stop <-chan struct{}) {
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		next := start.Add(time.Duration(i) * interval)
		if late := time.Since(next); late > 0 {
			l.mu.Lock()
			l.maxLate = max(l.maxLate, late)
			l.mu.Unlock()
		} else {
			time.Sleep(-late) // pacing the open-loop load, not synchronising
		}
		from := i % len(l.users)
		to := (from + 1) % len(l.users)
		// A UUIDv7, as the SDK makes them: a recent one spares the send
		// the database's duplicate lookup (services/chat).
		u, err := uuid.NewV7()
		if err != nil {
			l.b.Error(err)
			return
		}
		id := u.String()
		frame := fmt.Sprintf(`{"req_identifier":1003,"msg_incr":%q,"operation_id":%q,"data":{"client_msg_id":%q,"session_type":1,"recv_id":%q,"msg_type":101,"content":{"text":"load %d"}}}`,
			id, id, id, l.users[to], i)
		m := &retMsg{w: l.cur.Load(), sentAt: time.Now()}
		l.mu.Lock()
		l.msgs[id] = m
		l.sent++
		l.mu.Unlock()
		if err := l.conns[from].WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			l.b.Errorf("send %s: %v", id, err)
			return
		}
	}
}

// settle waits until every send is answered and, on the two-phase path,
// every accepted one saved, or until within passes; it reports the
// counts (sent, answered, saved).
func (l *retLoad) settle(within time.Duration) (sent, answered, saved int) {
	deadline := time.After(within)
	for {
		l.mu.Lock()
		sent, answered, saved = l.sent, l.acked+l.failures, l.saved
		l.mu.Unlock()
		if answered == sent && saved == sent-l.failures {
			return
		}
		select {
		case <-l.progress:
		case <-deadline:
			return
		}
	}
}

// retSummary is the median over windows of one kind (with or without the
// cleaner) of each window's percentiles, in milliseconds.
type retSummary struct {
	windows                   int
	sends                     int64
	ackP50, ackP99            float64
	lagP50, lagP99            float64
	pooledAckP99, pooledLag99 float64
}

// summarize takes the windows of kind cleaner that recorded at least
// minSpan and returns the medians of their percentiles, and the p99 of
// all their sends pooled.
func summarize(ws []*retWindow, cleaner bool, minSpan time.Duration) retSummary {
	var s retSummary
	var a50, a99, l50, l99 []float64
	ack, lag := hdrhistogram.New(1, 60_000_000, 3), hdrhistogram.New(1, 60_000_000, 3)
	for _, w := range ws {
		if w.cleaner != cleaner || w.to.Sub(w.from) < minSpan || w.ack.TotalCount() == 0 {
			continue
		}
		s.windows++
		s.sends += w.ack.TotalCount()
		a50, a99 = append(a50, ms(w.ack, 50)), append(a99, ms(w.ack, 99))
		ack.Merge(w.ack)
		if w.lag.TotalCount() > 0 {
			l50, l99 = append(l50, ms(w.lag, 50)), append(l99, ms(w.lag, 99))
			lag.Merge(w.lag)
		}
	}
	s.ackP50, s.ackP99, s.lagP50, s.lagP99 = median(a50), median(a99), median(l50), median(l99)
	s.pooledAckP99, s.pooledLag99 = ms(ack, 99), ms(lag, 99)
	return s
}

// median of xs (0 when empty; the mean of the middle two when even).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
