package main

import (
	"context"
	"fmt"
	"time"
)

// Session events across instances (the target: within 1 s). Each sample is
// one fresh user, three instances apart:
//
//   - kick: a session on instance B, then a second session with the same
//     token and platform on instance A; the login policy
//     (single_per_platform by default) replaces the first. Timed from the
//     second handshake's return to the first session's close as its
//     reader sees it. The first session answers a WebSocket ping before
//     the second dials: the server registers a session after the handshake
//     returns, and the later registration wins, so without it a slow
//     registration on B can make the first session the "newer" one.
//   - logout: POST /auth/logout of that token answered by instance C; the
//     session on A ends. Timed from the HTTP answer to the close.
//
// Samples run one after the other on an idle cluster: the figure is the
// propagation path (publish, inbox, close), not queueing behind a load.

// EventLatency is one kind of session event over the samples.
type EventLatency struct {
	Samples int64 `json:"samples"`
	// Latency runs from the reference (the second handshake's return; the
	// logout's HTTP answer) to the close; an event already seen before the
	// reference counts as 0 and in ClosedBeforeReference.
	Latency Percentiles `json:"latency"`
	// FromRequest runs from the start of the trigger (the handshake; the
	// HTTP request) to the close: an upper bound that includes the call.
	FromRequest           Percentiles `json:"from_request"`
	ClosedBeforeReference int64       `json:"closed_before_reference"`
	NotClosed             int64       `json:"not_closed_within_limit"`
	// WrongSession counts kicks that closed the newer session instead.
	WrongSession int64            `json:"wrong_session_closed,omitempty"`
	Reasons      map[string]int64 `json:"close_reasons"`
	Curve        [][2]float64     `json:"curve,omitempty"`
}

// Propagation is the session events part of the cluster result.
type Propagation struct {
	LimitS float64      `json:"limit_s"` // a sample not closed by then counts in not_closed
	Kick   EventLatency `json:"kick"`
	Logout EventLatency `json:"logout"`
}

// eventTally collects one kind of event.
type eventTally struct {
	h, req  *latencyHist
	out     EventLatency
	reasons map[string]int64
}

func newEventTally() *eventTally {
	return &eventTally{h: newLatencyHist(), req: newLatencyHist(), reasons: map[string]int64{}}
}

// wait waits for c to close (at most limit) and records the close against
// the reference ref and the trigger's start began (clock offsets).
func (t *eventTally) wait(ctx context.Context, c *conn, began, ref int64, limit time.Duration) {
	t.out.Samples++
	select {
	case <-c.done:
	case <-time.After(limit):
	case <-ctx.Done():
	}
	at := c.closedAt.Load()
	if at == 0 {
		t.out.NotClosed++
		return
	}
	if at < ref {
		t.out.ClosedBeforeReference++
	}
	t.h.record(at - ref)
	t.req.record(at - began)
	t.reasons[c.closedWhy()]++
}

func (t *eventTally) result() EventLatency {
	out := t.out
	out.Latency, out.FromRequest, out.Curve, out.Reasons = t.h.summary(), t.req.summary(), t.h.curve(), t.reasons
	return out
}

// nopHandler drops frames: the sessions of the propagation samples only
// need their close.
type nopHandler struct{}

func (nopHandler) onFrame(*conn, *inFrame, int64) {}

// propagation runs the samples over the cluster's first three instances
// (or as many as it has).
func propagation(ctx context.Context, c *benchCluster, samples int) (Propagation, error) {
	const limit = 10 * time.Second
	n := len(c.nodes)
	apis := make([]*api, n)
	for i, nd := range c.nodes {
		apis[i] = newAPI(nd.URL())
	}
	clk := newClock()
	prefix, _ := newPrefix(&options{})
	const password = "nexo-bench-pw"
	kick, logout := newEventTally(), newEventTally()
	for i := 0; i < samples && ctx.Err() == nil; i++ {
		b, a, cc := i%n, (i+1)%n, (i+2)%n
		user := fmt.Sprintf("%s-e%d", prefix, i)
		if err := apis[0].register(ctx, user, password, false); err != nil {
			return Propagation{}, fmt.Errorf("register %s: %w", user, err)
		}
		tok, err := apis[b].login(ctx, user, password, webPlatform)
		if err != nil {
			return Propagation{}, fmt.Errorf("login %s: %w", user, err)
		}
		sess := func(on int) *conn {
			return &conn{idx: on, user: user, platform: webPlatform, token: tok, base: c.nodes[on].URL(),
				handler: nopHandler{}, clk: clk, recv: newReceiver()}
		}
		first, second := sess(b), sess(a)
		if err := first.dial(ctx, apis[b]); err != nil {
			return Propagation{}, fmt.Errorf("connect %s on instance %d: %w", user, b+1, err)
		}
		if err := first.ping(ctx); err != nil { // registered on B (see above)
			first.close()
			return Propagation{}, fmt.Errorf("ping %s on instance %d: %w", user, b+1, err)
		}
		began := clk.now()
		if err := second.dial(ctx, apis[a]); err != nil {
			first.close()
			return Propagation{}, fmt.Errorf("second session of %s on instance %d: %w", user, a+1, err)
		}
		kick.wait(ctx, first, began, clk.now(), limit)
		first.close()
		if second.closedAt.Load() != 0 {
			kick.out.WrongSession++
			continue // nothing left to log out of on A
		}

		began = clk.now()
		if err := apis[cc].logout(ctx, tok); err != nil {
			second.close()
			return Propagation{}, fmt.Errorf("logout %s on instance %d: %w", user, cc+1, err)
		}
		logout.wait(ctx, second, began, clk.now(), limit)
		second.close()
	}
	return Propagation{LimitS: limit.Seconds(), Kick: kick.result(), Logout: logout.result()}, ctx.Err()
}
