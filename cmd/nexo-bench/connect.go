package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ConnectResult is the connection storm: how fast sessions open, whether
// they stay open while idle, and what each costs the server.
type ConnectResult struct {
	Connections    int              `json:"connections"`
	Users          int              `json:"users"`
	SetupS         float64          `json:"setup_s"` // registering and logging in, not measured
	Established    int              `json:"established"`
	Failures       map[string]int64 `json:"failures"`
	StormS         float64          `json:"storm_s"`
	RatePerS       float64          `json:"connections_per_s"`
	Handshake      Percentiles      `json:"handshake"`
	IdleS          float64          `json:"idle_s"`
	AliveAfterIdle int              `json:"alive_after_idle"`
	ClosedWhyIdle  map[string]int64 `json:"closed_during_idle"`

	// Server memory from its /metrics (absent when not exposed): before the
	// storm, with every session open, and at the end of the idle period.
	ServerBefore       *serverMem `json:"server_before,omitempty"`
	ServerOpen         *serverMem `json:"server_open,omitempty"`
	ServerAfterIdle    *serverMem `json:"server_after_idle,omitempty"`
	ServerRSSPerConn   float64    `json:"server_rss_bytes_per_conn,omitempty"`
	ServerHeapPerConn  float64    `json:"server_heap_stack_bytes_per_conn,omitempty"`
	ServerGoroutinesPC float64    `json:"server_goroutines_per_conn,omitempty"`
	// This process's Go heap and stacks per session (the client side).
	ClientBytesPerConn float64 `json:"client_heap_stack_bytes_per_conn"`
}

// connectPlatforms is how many sessions one account holds: one per
// platform_id, so the default single_per_platform login policy kicks none.
const connectPlatforms = 10

// runConnect opens o.Connections sessions as fast as --dial-concurrency
// allows, idles for o.Duration, then checks every session with a
// WebSocket ping.
func (s *session) runConnect(ctx context.Context, label string) (Result, error) {
	o := s.o
	n := o.Connections
	users := (n + connectPlatforms - 1) / connectPlatforms
	out := &ConnectResult{Connections: n, Users: users, Failures: map[string]int64{}, ClosedWhyIdle: map[string]int64{}, IdleS: o.Duration.Seconds()}
	rec := newRecorder(s.clk, randomTag(), 0, 0, ackAccepted)
	s.router.cur.Store(rec)
	t := s.topo

	setup := time.Now()
	ids := make([]string, users)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-c%d", t.prefix, i)
	}
	reuse := o.Prefix != ""
	if err := parallel(ctx, users, o.SetupConcurrency, func(ctx context.Context, i int) error {
		return t.api.register(ctx, ids[i], o.Password, reuse)
	}); err != nil {
		return Result{}, fmt.Errorf("register: %w", err)
	}
	conns := make([]*conn, n)
	if err := parallel(ctx, n, o.SetupConcurrency, func(ctx context.Context, i int) error {
		u, p := ids[i/connectPlatforms], i%connectPlatforms+1
		tok, err := t.api.login(ctx, u, o.Password, p)
		conns[i] = &conn{idx: i, user: u, platform: p, token: tok, handler: s.router, clk: s.clk, recv: newReceiver()}
		return err
	}); err != nil {
		return Result{}, fmt.Errorf("login: %w", err)
	}
	t.conns = append(t.conns, conns...)
	for _, c := range conns {
		t.tokens = append(t.tokens, c.token)
	}
	out.SetupS = round3(time.Since(setup).Seconds())
	fmt.Fprintf(s.log, "%s: %d users logged in on %d sessions in %.1fs\n", label, users, n, out.SetupS)

	if m, ok := t.api.serverMemory(ctx); ok {
		out.ServerBefore = &m
	}
	clientBefore := clientMemory()
	hs := newLatencyHist()
	var mu sync.Mutex
	var opened atomic.Int64
	stopTick := s.tick(label, func() string { return fmt.Sprintf("%d/%d open", opened.Load(), n) })
	stormStart := time.Now()
	_ = parallel(ctx, n, o.DialConcurrency, func(ctx context.Context, i int) error {
		t0 := time.Now()
		err := conns[i].dial(ctx, t.api)
		d := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			out.Failures[reasonOf(err)]++
			return nil
		}
		hs.record(int64(d))
		opened.Add(1)
		return nil
	})
	storm := time.Since(stormStart)
	stopTick()
	out.Established = int(opened.Load())
	out.StormS = round3(storm.Seconds())
	out.RatePerS = round1(float64(out.Established) / storm.Seconds())
	out.Handshake = hs.summary()
	out.ClientBytesPerConn = round1(float64(clientMemory()-clientBefore) / float64(max(out.Established, 1)))
	if m, ok := t.api.serverMemory(ctx); ok {
		out.ServerOpen = &m
	}

	stopTick = s.tick(label, func() string {
		alive := 0
		for _, c := range conns {
			if c.alive() {
				alive++
			}
		}
		return fmt.Sprintf("idle, %d/%d open", alive, out.Established)
	})
	select {
	case <-ctx.Done():
	case <-time.After(o.Duration):
	}
	stopTick()
	var alive atomic.Int64
	_ = parallel(ctx, n, o.DialConcurrency, func(ctx context.Context, i int) error {
		c := conns[i]
		if c.ws == nil {
			return nil
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if c.ping(pctx) == nil {
			alive.Add(1)
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		out.ClosedWhyIdle[firstNonEmpty(c.closedWhy(), "no_pong")]++
		return nil
	})
	out.AliveAfterIdle = int(alive.Load())
	if m, ok := t.api.serverMemory(ctx); ok {
		out.ServerAfterIdle = &m
	}
	if b, o := out.ServerBefore, out.ServerOpen; b != nil && o != nil && out.Established > 0 {
		e := float64(out.Established)
		if b.RSS > 0 && o.RSS > 0 {
			out.ServerRSSPerConn = round1(float64(o.RSS-b.RSS) / e)
		}
		out.ServerHeapPerConn = round1(float64(o.HeapInuse+o.StackInuse-b.HeapInuse-b.StackInuse) / e)
		out.ServerGoroutinesPC = round3(float64(o.Goroutines-b.Goroutines) / e)
	}

	res := rec.finish(nil)
	s.fill(&res, label)
	res.Connect = out
	for k, v := range out.Failures {
		res.Errors["connect_"+k] = v
	}
	res.OK = len(out.Failures) == 0 && out.AliveAfterIdle == out.Established
	res.Timeline, res.Curves = nil, map[string][][2]float64{"handshake": hs.curve()}
	return res, ctx.Err()
}

// clientMemory is this process's Go heap and stacks in use, after a GC.
func clientMemory() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// tick prints status() every second (five on a non-terminal) until stopped.
func (s *session) tick(label string, status func() string) (stop func()) {
	if s.o.Quiet {
		return func() {}
	}
	tty := isTerminal(s.log)
	every := time.Second
	if !tty {
		every = 5 * time.Second
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprintln(s.log)
				}
				return
			case <-tk.C:
				if tty {
					fmt.Fprintf(s.log, "\r%-100s", label+": "+status())
				} else {
					fmt.Fprintln(s.log, label+": "+status())
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}
