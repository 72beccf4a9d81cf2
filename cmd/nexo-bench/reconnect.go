package main

import (
	"context"
	"math"
	"sync"
	"time"
)

// ReconnectResult describes the reconnect scenario's drop and recovery.
type ReconnectResult struct {
	Dropped     int              `json:"dropped"`
	Reconnected int              `json:"reconnected"`
	Failures    map[string]int64 `json:"failures,omitempty"`
	OfflineS    float64          `json:"offline_s"`
	// Reconnect is the handshake time of the new session.
	Reconnect Percentiles `json:"reconnect"`
	// GapFill is the time from the new session to the last missing seq
	// read by pull.
	GapFill    Percentiles `json:"gap_fill_time"`
	Pulls      int64       `json:"pulls"`
	Incomplete int         `json:"incomplete"` // sessions whose gap was not filled within --grace
}

// reconnector drops a share of the receivers at a point of the run,
// keeps them away for --offline, reconnects them with their token, gives
// the server's offline resend resendWait to push what they missed, and
// then fills what is still missing by pulling each conversation up to the
// highest seq acknowledged to the senders when the session came back.
// Messages recovered either way count as recovered, not delivered.
type reconnector struct {
	s    *session
	rec  *recorder
	at   int64
	done chan struct{}

	mu         sync.Mutex
	res        ReconnectResult
	hReconnect *latencyHist
	hFill      *latencyHist
}

func newReconnector(s *session, rec *recorder, at int64) *reconnector {
	return &reconnector{s: s, rec: rec, at: at, done: make(chan struct{}),
		hReconnect: newLatencyHist(), hFill: newLatencyHist(),
		res: ReconnectResult{Failures: map[string]int64{}, OfflineS: s.o.Offline.Seconds()}}
}

// victims are the first ceil(drop-share × receivers) receivers, with the
// conversations each of them must recover.
func (rc *reconnector) victims() map[*conn][]string {
	var order []*conn
	convs := map[*conn][]string{}
	for _, snd := range rc.s.topo.senders {
		for _, c := range snd.to.recipients {
			if _, ok := convs[c]; !ok {
				order = append(order, c)
			}
			convs[c] = append(convs[c], snd.to.conv)
		}
	}
	n := int(math.Ceil(float64(len(order)) * rc.s.o.DropShare))
	out := map[*conn][]string{}
	for _, c := range order[:min(n, len(order))] {
		out[c] = convs[c]
	}
	return out
}

func (rc *reconnector) run(ctx context.Context) {
	defer close(rc.done)
	clk := rc.s.clk
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(clk.at(rc.at))):
	}
	victims := rc.victims()
	from := map[*conn]map[string]int64{}
	for c, convs := range victims {
		c.drop()
		from[c] = map[string]int64{}
		for _, conv := range convs {
			from[c][conv] = max(c.recv.highest(conv)+1, rc.rec.firstSeq(conv))
		}
	}
	rc.res.Dropped = len(victims)
	select {
	case <-ctx.Done():
		return
	case <-time.After(rc.s.o.Offline):
	}
	deadline := time.Now().Add(rc.s.o.Offline + rc.s.o.Grace + rc.s.o.Duration)
	var wg sync.WaitGroup
	for c, convs := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			if err := c.dial(ctx, rc.s.topo.api); err != nil {
				rc.fail(reasonOf(err))
				return
			}
			back := time.Now()
			c.resumedAt.Store(rc.s.clk.now())
			rc.mu.Lock()
			rc.res.Reconnected++
			rc.hReconnect.record(int64(back.Sub(t0)))
			rc.mu.Unlock()
			// What the session must recover: from the first seq it lacked to
			// the highest acknowledged to the senders by now. The server's
			// offline resend gets resendWait to push it; the pull then reads
			// whatever is still missing, as a client fills gaps.
			upTo := map[string]int64{}
			for _, conv := range convs {
				upTo[conv] = rc.rec.lastSeq(conv)
			}
			waitFor := time.Now().Add(resendWait)
			for time.Now().Before(waitFor) && !rc.held(c, convs, from[c], upTo) {
				time.Sleep(10 * time.Millisecond)
			}
			complete := true
			for _, conv := range convs {
				next := c.recv.firstMissing(conv, from[c][conv], upTo[conv])
				if next > 0 && !rc.fill(ctx, c, conv, next, upTo[conv], deadline) {
					complete = false
				}
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if complete {
				rc.hFill.record(int64(time.Since(back)))
			} else {
				rc.res.Incomplete++
			}
		}()
	}
	wg.Wait()
}

// fill pulls conv from next to target, waiting for seqs the server has not
// saved yet, until deadline. It reports whether it got there.
func (rc *reconnector) fill(ctx context.Context, c *conn, conv string, next, target int64, deadline time.Time) bool {
	for next > 0 && next <= target {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := c.pull(pctx, pullData{ConversationID: conv, BeginSeq: next, EndSeq: target, Limit: maxPullLimit})
		cancel()
		rc.mu.Lock()
		rc.res.Pulls++
		rc.mu.Unlock()
		if err != nil {
			rc.rec.countError("pull_"+reasonOf(err), rc.s.clk.now())
			return false
		}
		at := rc.s.clk.now()
		last := next - 1
		for i := range res.Messages {
			rc.rec.onShown(c, &res.Messages[i], at, false, false)
			last = max(last, res.Messages[i].Seq)
		}
		if last < next { // not saved yet: poll again shortly
			time.Sleep(20 * time.Millisecond)
			continue
		}
		next = last + 1
	}
	return true
}

// resendWait is how long a reconnected session waits for the server's
// offline resend before it pulls what is still missing.
const resendWait = 500 * time.Millisecond

// held reports whether c holds every seq of each conversation's range.
func (rc *reconnector) held(c *conn, convs []string, from, upTo map[string]int64) bool {
	for _, conv := range convs {
		if c.recv.firstMissing(conv, from[conv], upTo[conv]) > 0 {
			return false
		}
	}
	return true
}

func (rc *reconnector) fail(reason string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.res.Failures[reason]++
}

// wait blocks until the drop and recovery are over.
func (rc *reconnector) wait() { <-rc.done }

func (rc *reconnector) result() *ReconnectResult {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r := rc.res
	r.Reconnect, r.GapFill = rc.hReconnect.summary(), rc.hFill.summary()
	return &r
}
