package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// sender is one source of load: connections taking turns (one for single
// chat; a group's online members for group chat) writing to one target.
// Only its own goroutine uses it.
type sender struct {
	conns []*conn
	to    *target
	next  int
	buf   []byte
	mix   *senderMix // --picture-share, --action-share; nil when both are 0
}

// load is what drive generates.
type load struct {
	rate     float64 // open loop: msg/s over all senders; 0 = closed loop
	inflight int     // closed loop: messages in flight per sender
	start    int64   // clock offset of the first due message
	end      int64   // nothing is sent at or after this offset
	timeout  int64   // closed loop: an answer later than this frees the slot
	text     []byte  // the payload as a JSON string, quotes included
}

// payloadText returns n bytes of text as a JSON string literal.
func payloadText(n int) []byte {
	b, _ := json.Marshal(strings.Repeat("x", n))
	return b
}

// drive sends until l.end and returns. Open loop: message k of sender i is
// due at start + (i + k·senders)/rate seconds and its latencies are
// measured from that due time, so a stalled server or a slow generator
// shows up as latency instead of silently lowering the rate (coordinated
// omission). Closed loop: each sender keeps l.inflight messages in flight
// and a latency is measured from the actual send.
func drive(ctx context.Context, clk *clock, rec *recorder, senders []*sender, l load) {
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if l.rate == 0 {
		go watchdog(ctx, clk, rec, l.timeout)
	}
	n := len(senders)
	for i, s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.rate > 0 {
				interval := float64(n) / l.rate * 1e9
				s.openLoop(ctx, clk, rec, l, int64(float64(i)*interval/float64(n)), interval)
			} else {
				s.closedLoop(ctx, clk, rec, l)
			}
		}()
	}
	wg.Wait()
}

func (s *sender) openLoop(ctx context.Context, clk *clock, rec *recorder, l load, offset int64, interval float64) {
	p := newPacer(ctx)
	defer p.close()
	for k := 0; ; k++ {
		due := l.start + offset + int64(float64(k)*interval)
		if due >= l.end {
			return
		}
		if d := due - clk.now(); d > 0 && !p.sleep(time.Duration(d)) {
			return
		}
		s.send(clk, rec, l, due, nil)
	}
}

func (s *sender) closedLoop(ctx context.Context, clk *clock, rec *recorder, l load) {
	slots := make(chan struct{}, l.inflight)
	for range l.inflight {
		slots <- struct{}{}
	}
	if d := l.start - clk.now(); d > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(d)):
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-slots:
		}
		now := clk.now()
		if now >= l.end {
			return
		}
		s.send(clk, rec, l, now, slots)
	}
}

// send writes the next message. The frame is built by hand: IDs are
// [A-Za-z0-9_-] and the text is pre-encoded, so nothing needs escaping and
// the generator spends its CPU on the socket, not on reflection.
func (s *sender) send(clk *clock, rec *recorder, l load, due int64, slot chan struct{}) {
	c := s.conns[s.next]
	s.next = (s.next + 1) % len(s.conns)
	var pic *picture
	if s.mix != nil {
		var acted bool
		if pic, acted = s.mix.choose(clk, rec, c, s.to, due, slot); acted {
			return
		}
	}
	cmid := rec.newMsg(c, s.to, due, clk.now(), slot)
	if pic != nil {
		rec.setPicture(cmid, pic)
	}
	b := s.buf[:0]
	b = append(b, `{"req_identifier":1003,"msg_incr":"`...)
	b = append(b, cmid...)
	b = append(b, `","operation_id":"`...)
	b = append(b, cmid...)
	b = append(b, `","data":{"client_msg_id":"`...)
	b = append(b, cmid...)
	b = append(b, `","session_type":`...)
	b = strconv.AppendInt(b, int64(s.to.sessionType), 10)
	if s.to.sessionType == sessionGroup {
		b = append(b, `,"group_id":"`...)
		b = append(b, s.to.groupID...)
	} else {
		b = append(b, `,"recv_id":"`...)
		b = append(b, s.to.recvID...)
	}
	if pic != nil {
		b = append(b, `","msg_type":102,"content":{"image":{"object_id":"`...)
		b = append(b, pic.objectID...)
		b = append(b, `"}}}}`...)
	} else {
		b = s.appendText(b, rec, l, cmid)
	}
	s.buf = b
	if err := c.writeRaw(b); err != nil {
		rec.writeFailed(cmid, err)
	}
}

// appendText appends a text message's msg_type and content, and closes
// the frame.
func (s *sender) appendText(b []byte, rec *recorder, l load, cmid string) []byte {
	b = append(b, `","msg_type":101,"content":{"text":`...)
	if w := rec.probeWord(cmid); w != "" {
		b = append(b, '"')
		b = append(b, w...)
		b = append(b, ' ')
		b = append(b, l.text[1:]...) // the payload's opening quote replaced
	} else {
		b = append(b, l.text...)
	}
	return append(b, `}}}`...)
}

// writeRaw sends an encoded text frame. Safe for concurrent use.
func (c *conn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.ws == nil {
		return websocket.ErrCloseSent
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.writeWait))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// watchdog frees closed-loop slots of messages whose answer is overdue.
func watchdog(ctx context.Context, clk *clock, rec *recorder, timeout int64) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rec.expire(clk.now(), timeout)
		}
	}
}
