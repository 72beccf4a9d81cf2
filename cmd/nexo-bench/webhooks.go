package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The webhooks step (the webhooks target): the pipeline at 5,000 msg/s with
// after_send and offline_push enabled and a receiver on localhost, side by
// side with webhooks off. Two in-process servers share the database and
// Redis (their own key prefixes); runs alternate A, B, A, B, A, B.

// hookReceiver is the app's endpoint on localhost: it answers 200 at once
// and counts what arrived, by event (the events of a batched request one
// by one) and by request.
type hookReceiver struct {
	srv      *http.Server
	url      string
	total    atomic.Int64
	mu       sync.Mutex
	events   map[string]int64 // by event, counted inside batches
	requests int64
	last     atomic.Int64 // Unix ns of the last request
}

func startHookReceiver() (*hookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &hookReceiver{events: map[string]int64{}, url: "http://" + ln.Addr().String() + "/hook"}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		event := req.Header.Get("X-Nexo-Event")
		var batch struct {
			Events []struct {
				Event string `json:"event"`
			} `json:"events"`
		}
		if event == "batch" {
			if err := json.NewDecoder(req.Body).Decode(&batch); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
		}
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		if event == "batch" {
			for _, e := range batch.Events {
				r.events[e.Event]++
			}
		} else {
			r.events[event]++
		}
		r.requests++
		r.mu.Unlock()
		r.total.Add(1)
		r.last.Store(time.Now().UnixNano())
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *hookReceiver) counts() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.events))
	for k, v := range r.events {
		out[k] = v
	}
	return out
}

// settle waits until no event has arrived for quiet (at most limit): the
// webhook side's backlog must not spill into the next run of either side.
func (r *hookReceiver) settle(ctx context.Context, quiet, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		idle := time.Since(time.Unix(0, r.last.Load()))
		if idle >= quiet {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook receiver still busy after %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet - idle):
		}
	}
}

// hookSwitch is the comparison's modeSwitch: it names each side and, before
// every run, lets the receiver go quiet.
type hookSwitch struct {
	ctx  context.Context
	recv *hookReceiver
}

func (h hookSwitch) SetMode(spec string) (string, error) {
	if err := h.recv.settle(h.ctx, 500*time.Millisecond, 2*time.Minute); err != nil {
		return "", err
	}
	if spec == "" {
		return "webhooks off", nil
	}
	return "webhooks on (" + spec + ")", nil
}

// webhookEnv enables after_send and offline_push towards url, batch
// events per request.
func webhookEnv(url string, batch int) []string {
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	return []string{
		"NEXO_WEBHOOKS_URL=" + url,
		"NEXO_WEBHOOKS_SECRET=" + hex.EncodeToString(secret),
		"NEXO_WEBHOOKS_EVENTS=after_send,offline_push",
		"NEXO_WEBHOOKS_BATCH_SIZE=" + strconv.Itoa(batch),
	}
}

// webhooks runs the comparison: A is the suite's server (webhooks off), B a
// second server with after_send and offline_push on.
func (s *suite) webhooks(ctx context.Context, name string) (SuiteEntry, error) {
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "compare"
	recv, err := startHookReceiver()
	if err != nil {
		return e, err
	}
	defer recv.srv.Close()
	so := s.so
	so.FreshDB = false // the suite's server uses the database already
	so.Env = webhookEnv(recv.url, s.hookBatch)
	hooked, err := startInProcess(ctx, so, s.log)
	if err != nil {
		return e, fmt.Errorf("start the server with webhooks: %w", err)
	}
	defer hooked.Close()

	c, err := s.compareAt5k(ctx, name, hooked, fmt.Sprintf("after_send,offline_push, batch_size %d", s.hookBatch), hookSwitch{ctx: ctx, recv: recv})
	if err != nil {
		return e, err
	}
	if err := recv.settle(ctx, 500*time.Millisecond, 2*time.Minute); err != nil {
		return e, err
	}
	got := recv.counts()
	var saved float64
	for _, r := range c.B.Runs {
		saved += float64(r.Counts.Saved)
	}
	recv.mu.Lock()
	requests := recv.requests
	recv.mu.Unlock()
	fmt.Fprintf(s.log, "webhook receiver: %v in %d requests (B saved %d messages over %d runs, warm-ups included in the events)\n", got, requests, int64(saved), len(c.B.Runs))
	writeCompare(s.stdout, c)
	e.OK = c.A.Median["failures"]+c.B.Median["failures"] == 0
	if got["after_send"] < int64(saved) {
		e.OK = false
		err = errors.New("the receiver got fewer after_send events than B saved messages")
	}
	return e, errors.Join(err, writeOutputs(jsonPath, htmlPath, c, name, compareText(c), compareChart(c)))
}

// compareAt5k runs single chat, 100 pairs at --pair-rate (5,000 msg/s by
// default) for 2 s after
// 0.5 s, 3 alternating runs each, on the suite's server (A) and other (B),
// each with sessions of its own. sw, when set, is told each side's spec
// ("" for A, specB for B) before its run.
func (s *suite) compareAt5k(ctx context.Context, name string, other *inProcessServer, specB string, sw modeSwitch) (*CompareResult, error) {
	o := s.base()
	o.Label, o.Pairs, o.Rate, o.Repeat = name, 100, s.pairRate, 3
	o.Warmup, o.Duration = 500*time.Millisecond, s.scaled(2*time.Second)
	if s.quick {
		o.Rate, o.Repeat = o.Rate/5, 1
	}
	a, err := newSession(ctx, &o, s.srv.URL(), s.log)
	if err != nil {
		return nil, err
	}
	defer a.close()
	ob := o
	b, err := newSession(ctx, &ob, other.URL(), s.log)
	if err != nil {
		return nil, err
	}
	defer b.close()
	return runCompare(ctx, s.log, &o, a, b, "", specB, sw)
}
