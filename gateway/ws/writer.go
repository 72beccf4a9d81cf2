package ws

import (
	"sync"
	"time"

	"github.com/hertz-contrib/websocket"
)

// kind is what an outbound queue item writes.
type kind uint8

const (
	kindData  kind = iota // a JSON text frame
	kindPing              // a WebSocket ping
	kindPong              // a WebSocket pong answering the client's ping
	kindClose             // a WebSocket close frame; always the last item
)

// outbound is one queue item: a shared text frame or a control frame.
type outbound struct {
	kind    kind
	frame   Frame
	payload []byte // control frame payload
}

// pendingLocked counts the frames queued or being written.
func (c *Conn) pendingLocked() int { return c.q.len() + c.inflight }

// push queues it without blocking. A full queue (ws.send_queue frames
// pending) closes the connection as a slow consumer: the publisher moves on
// and the server holds no more than send_queue frames per connection.
func (c *Conn) push(it outbound) bool {
	c.mu.Lock()
	if c.sealed {
		c.mu.Unlock()
		return false
	}
	if c.pendingLocked() >= c.s.cfg.SendQueue {
		c.mu.Unlock()
		c.slowConsumer("send queue full")
		return false
	}
	c.q.push(it)
	c.checkHighWaterLocked()
	c.startWriterLocked()
	c.mu.Unlock()
	return true
}

// reply answers a request from the connection's reader goroutine. With
// nothing queued or being written it writes f on this goroutine, sparing
// the writer goroutine's start and wake-up that otherwise cost every
// request its own (at light load, one ACK per send); else f is queued
// behind what is pending, in order. A write that blocks holds only this
// connection's reader, as the writer would hold the connection: reading
// resumes when the write completes or ws.write_timeout fails it.
func (c *Conn) reply(f Frame) bool {
	if f.IsZero() {
		return false
	}
	c.mu.Lock()
	if c.writing || c.sealed || c.dead || c.t == nil || c.q.len() > 0 {
		c.mu.Unlock()
		return c.Send(f)
	}
	c.writing, c.inflight = true, 1
	c.writer.Add(1)
	c.mu.Unlock()

	err := c.t.WriteTexts([][]byte{f.data}, time.Now().Add(c.s.cfg.WriteTimeout))

	c.mu.Lock()
	c.writing, c.inflight = false, 0
	c.checkHighWaterLocked()
	if err == nil && c.q.len() > 0 {
		c.startWriterLocked() // frames queued meanwhile found writing set
	}
	c.mu.Unlock()
	c.writer.Done()
	if err != nil {
		c.fail("write_error")
		return false
	}
	c.s.metrics.framesOut.Inc()
	return true
}

// startWriterLocked starts the writer if none runs. The writer lives only
// while frames are queued, so an idle connection costs no goroutine besides
// its reader; the writing flag keeps it to one writer per connection.
func (c *Conn) startWriterLocked() {
	if c.writing || c.dead || c.t == nil {
		return
	}
	c.writing = true
	c.writer.Add(1)
	go c.writeLoop()
}

// Bounds of one coalesced write: the writer takes at most this many queued
// items (and data frames of at most batchBytes in all) per wakeup.
const (
	batchItems = 64
	batchBytes = 64 << 10
)

// writeScratch is a writer's working space, pooled: the writer exists only
// while frames are queued, so at light load it starts once per frame, and
// 64 items on its stack (4 KiB) plus the texts slice on the heap were
// paid on every start.
type writeScratch struct {
	batch [batchItems]outbound
	texts [batchItems][]byte
}

var scratchPool = sync.Pool{New: func() any { return new(writeScratch) }}

// writeLoop writes queued items in order until the queue is empty. Each
// wakeup takes everything queued (up to batchItems / batchBytes) and writes
// consecutive data frames with one system call, as nats-server's flush loop
// does: under load a connection's ACK, ACK(saved) push and delivery pushes
// share a write instead of paying one each. Every write has ws.write_timeout
// as its deadline; a failed write closes the connection (the client
// reconnects and pulls).
func (c *Conn) writeLoop() {
	defer c.writer.Done()
	sc := scratchPool.Get().(*writeScratch)
	defer scratchPool.Put(sc)
	batch, texts := &sc.batch, sc.texts[:0]
	for {
		c.mu.Lock()
		n, size := 0, 0
		for n < batchItems && !c.dead {
			it, ok := c.q.peek()
			if !ok || (n > 0 && size+len(it.frame.data) > batchBytes) {
				break
			}
			c.q.pop()
			batch[n] = it
			size += len(it.frame.data)
			n++
		}
		if n == 0 || c.dead {
			c.writing, c.inflight = false, 0
			c.mu.Unlock()
			clear(batch[:n])
			return
		}
		c.inflight = n
		c.mu.Unlock()

		frames, err := c.writeBatch(batch[:n], texts)
		clear(batch[:n]) // drop the frame references for the GC

		c.mu.Lock()
		c.inflight = 0
		c.checkHighWaterLocked()
		c.mu.Unlock()
		c.s.metrics.framesOut.Add(float64(frames))
		if err != nil {
			c.fail("write_error")
			continue // the next iteration sees dead and exits
		}
	}
}

// writeBatch writes items in order: each run of data frames with one
// WriteTexts, control frames one by one. texts is scratch space. It returns
// how many data frames were written.
func (c *Conn) writeBatch(items []outbound, texts [][]byte) (frames int, err error) {
	deadline := time.Now().Add(c.s.cfg.WriteTimeout)
	texts = texts[:0]
	defer clear(texts[:cap(texts)])
	flush := func() error {
		if len(texts) == 0 {
			return nil
		}
		err := c.t.WriteTexts(texts, deadline)
		if err == nil {
			frames += len(texts)
		}
		texts = texts[:0]
		return err
	}
	for _, it := range items {
		if it.kind == kindData {
			texts = append(texts, it.frame.data)
			continue
		}
		if err := flush(); err != nil {
			return frames, err
		}
		if err := c.writeControl(it, deadline); err != nil {
			return frames, err
		}
	}
	return frames, flush()
}

func (c *Conn) writeControl(it outbound, deadline time.Time) error {
	switch it.kind {
	case kindPing:
		return c.t.WriteControl(websocket.PingMessage, nil, deadline)
	case kindPong:
		return c.t.WriteControl(websocket.PongMessage, it.payload, deadline)
	default:
		return c.t.WriteControl(websocket.CloseMessage, it.payload, deadline)
	}
}

// checkHighWaterLocked arms a timer when the pending count rises above
// ws.high_water and disarms it when it falls back; a connection that stays
// above for ws.close_unwritable_after is closed (a slow consumer, docs/gateway.md).
func (c *Conn) checkHighWaterLocked() {
	above := c.pendingLocked() > c.s.cfg.HighWater
	switch {
	case above && c.hwTimer == nil && !c.dead:
		c.hwGen++
		gen := c.hwGen
		c.hwTimer = time.AfterFunc(c.s.cfg.CloseUnwritableAfter, func() { c.unwritable(gen) })
	case !above && c.hwTimer != nil:
		c.stopHighWaterLocked()
	}
}

func (c *Conn) stopHighWaterLocked() {
	if c.hwTimer != nil {
		c.hwTimer.Stop()
		c.hwTimer = nil
	}
	c.hwGen++ // a timer that already fired finds a newer generation and does nothing
}

// unwritable runs when the high-water timer of generation gen fires.
func (c *Conn) unwritable(gen uint64) {
	c.mu.Lock()
	stale := gen != c.hwGen
	c.mu.Unlock()
	if !stale {
		c.slowConsumer("above high water for ws.close_unwritable_after")
	}
}

// slowConsumer closes the connection at once: frames queued for it could
// not be written in time, and queuing more would grow memory without bound.
func (c *Conn) slowConsumer(why string) {
	c.setCause("slow_consumer")
	c.closeAfter(func() {
		c.s.metrics.slowCloses.Inc()
		c.s.log.Info("ws slow consumer closed", "conn_id", c.id, "user_id", c.userID,
			"platform_id", c.platformID, "why", why)
	})
}

// formatClose builds a close frame payload; the text is cut to the 123
// bytes a control frame leaves for it.
func formatClose(code int, text string) []byte {
	if len(text) > 123 {
		text = text[:123]
	}
	return websocket.FormatCloseMessage(code, text)
}
