package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// router hands frames to the current run's recorder; connections outlive
// runs. Frames arriving between runs are dropped.
type router struct{ cur atomic.Pointer[recorder] }

func (rt *router) onFrame(c *conn, f *inFrame, at int64) {
	if r := rt.cur.Load(); r != nil {
		r.onFrame(c, f, at)
	}
}

// modeSwitch changes the pipeline switches of a server the bench started
// (--compare); nil for a remote server.
type modeSwitch interface {
	// SetMode applies "key=value,..." over the server's configured switches
	// ("" restores them) and returns the resulting mode in words.
	SetMode(spec string) (string, error)
}

// session is a set-up topology plus what runs need.
type session struct {
	o      *options
	topo   *topology
	router *router
	clk    *clock
	url    string
	mode   string // the in-process server's switches, for the report
	log    io.Writer
}

// newSession sets up the scenario's world against url.
func newSession(ctx context.Context, o *options, url string, log io.Writer) (*session, error) {
	s := &session{o: o, router: &router{}, clk: newClock(), url: url, log: log}
	prefix, _ := newPrefix(o)
	s.topo = &topology{api: newAPI(url), clk: s.clk, handler: s.router, o: o, prefix: prefix}
	start := time.Now()
	var err error
	switch o.Scenario {
	case "single", "reconnect":
		err = s.topo.buildSingle(ctx)
	case "group":
		err = s.topo.buildGroup(ctx)
	default:
		return s, nil // connect builds its own sessions: they are the measurement
	}
	if err == nil {
		err = s.topo.setupMix(ctx)
	}
	if err != nil {
		s.topo.teardown(context.Background())
		return nil, fmt.Errorf("set up %s at %s: %w", o.Scenario, url, err)
	}
	fmt.Fprintf(log, "set up %d users, %d groups, %d sessions in %.1fs (prefix %s)\n",
		len(s.topo.conns), len(s.topo.groups), len(s.topo.online()), time.Since(start).Seconds(), prefix)
	return s, nil
}

// runMessages runs one measured message scenario (single, group,
// reconnect) over the session's topology.
func (s *session) runMessages(ctx context.Context, label string) (Result, error) {
	o := s.o
	tag := randomTag()
	s.topo.resetReceivers()
	srv0, srvOK := s.topo.api.serverMemory(ctx)
	now := s.clk.now()
	start := now + int64(100*time.Millisecond)
	from := start + int64(o.Warmup)
	end := from + int64(o.Duration)
	rec := newRecorder(s.clk, tag, from, end, o.Await)
	rec.tl.origin = start // timeline seconds count from when sending starts, as the captions say
	rec.pulls = func(c *conn, conv string) { go s.notifyPull(ctx, rec, c, conv) }
	if o.ActionShare > 0 {
		rec.acts = newActionBook()
	}
	var probes sync.WaitGroup
	if o.SearchProbe > 0 {
		rec.probeEvery = o.SearchProbe
		rec.onProbe = func(m *msgRec, savedAt int64) {
			probes.Add(1)
			go func() {
				defer probes.Done()
				s.searchProbe(ctx, rec, m, savedAt)
			}()
		}
	}
	s.router.cur.Store(rec)

	var rc *reconnector
	if o.Scenario == "reconnect" {
		rc = newReconnector(s, rec, from+int64(o.Duration)/3)
		go rc.run(ctx)
	}
	stopAcks := s.deliveredAcks(ctx, rec)
	defer stopAcks()
	stop := startProgress(ctx, s.log, o.Quiet, label, s.clk, rec, start, from, end)
	cpu0 := sampleCPU()
	drive(ctx, s.clk, rec, s.topo.senders, load{
		rate: o.Rate, inflight: o.Inflight, start: start, end: end,
		timeout: int64(o.AckTimeout), text: payloadText(o.Payload),
	})
	usage := usageBetween(cpu0, sampleCPU())
	if srv1, ok := s.topo.api.serverMemory(ctx); ok && srvOK && usage.Seconds > 0 {
		usage.ServerCores = round3((srv1.CPUSeconds - srv0.CPUSeconds) / usage.Seconds)
		usage.ServerRSSBytes = srv1.RSS
	}
	if rc != nil {
		rc.wait()
	}
	s.drain(ctx, rec)
	probes.Wait()
	stop()
	res := rec.finish(s.topo.conns)
	if rc != nil {
		res.Reconnect = rc.result()
	}
	s.fill(&res, label)
	res.Usage = usage
	if rec.noAcks.Load() {
		res.Notes = append(res.Notes, "the server answered 1101 (delivered ACK) with unknown_request: no delivered ACKs were sent, so a reconnect's resend (if any) starts from the last cursor the server has")
	}
	return res, ctx.Err()
}

// deliveredAcks starts, when --delivered-ack is set, one goroutine per
// receiving session that reports its contiguous prefix per conversation
// with 1101 {ack_type: delivered}, as a client does so that the server's
// offline resend starts where the client stands. The answers go to the
// recorder, which counts failures.
func (s *session) deliveredAcks(ctx context.Context, rec *recorder) (stop func()) {
	every := s.o.DeliveredAck
	if every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	seen := map[*conn]bool{}
	for _, snd := range s.topo.senders {
		for _, c := range snd.to.recipients {
			if seen[c] {
				continue
			}
			seen[c] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.NewTicker(every)
				defer t.Stop()
				var n int
				for {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
					if rec.noAcks.Load() {
						return
					}
					for conv, seq := range c.recv.dueAcks() {
						n++
						b := fmt.Appendf(nil, `{"req_identifier":%d,"msg_incr":"k%d","operation_id":"k%d","data":{"ack_type":"delivered","conversation_id":%q,"seq":%d}}`,
							reqMsgAck, n, n, conv, seq)
						_ = c.writeRaw(b) // a dropped session reports again after it reconnects
					}
				}
			}()
		}
	}
	return func() { cancel(); wg.Wait() }
}

// maxDrain caps the drain however long the server keeps making progress.
const maxDrain = 2 * time.Minute

// drain waits for every outstanding ACK and push. A backlog that is still
// moving is waited for (its messages are late, and the histograms say so,
// not lost); the drain ends when nothing has arrived for o.Grace, and what
// is still missing then counts as lost.
func (s *session) drain(ctx context.Context, rec *recorder) {
	limit := time.Now().Add(maxDrain)
	last := rec.progress()
	quietSince := time.Now()
	for ctx.Err() == nil && time.Now().Before(limit) {
		p := rec.progress()
		if p.outstanding <= 0 {
			return
		}
		if p != last {
			last, quietSince = p, time.Now()
		} else if time.Since(quietSince) >= s.o.Grace {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// notifyPull reads what a 2102 announced: from the highest seq the
// connection has shown (or the first seq of this run) up to the announced
// max_seq, coalescing notifies that arrive meanwhile.
func (s *session) notifyPull(ctx context.Context, rec *recorder, c *conn, conv string) {
	next := max(c.recv.highest(conv)+1, rec.firstSeq(conv))
	for {
		target, more := c.recv.pullTarget(conv, next-1)
		if !more {
			return
		}
		if next <= 1 { // nothing known of this conversation: read the newest page
			next = max(1, target-maxPullLimit+1)
		}
		res, err := c.pull(ctx, pullData{ConversationID: conv, BeginSeq: next, EndSeq: target, Limit: maxPullLimit})
		if err != nil {
			rec.countError("pull_"+reasonOf(err), s.clk.now())
			c.recv.abortPull(conv)
			return
		}
		at := s.clk.now()
		last := next - 1
		for i := range res.Messages {
			rec.onShown(c, &res.Messages[i], at, false, true)
			last = max(last, res.Messages[i].Seq)
		}
		if last < next { // the server has not saved them yet: the next notify retries
			c.recv.abortPull(conv)
			return
		}
		next = last + 1
	}
}

// fill adds the description of the run to a result.
func (s *session) fill(res *Result, label string) {
	res.Tool, res.Schema, res.Name, res.Scenario = "nexo-bench", 1, label, s.o.Scenario
	res.StartedAt = s.clk.base.UTC().Format(time.RFC3339)
	res.Target = Target{URL: s.url, InProcess: s.o.InProcess, Mode: s.mode}
	res.Machine = machine()
	res.Params = s.o.params()
	if res.Params.Loop != "" {
		res.Params.Senders = len(s.topo.senders)
	}
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func randomTag() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "b" + hex.EncodeToString(b)
}

// close tears the session down.
func (s *session) close() {
	for _, w := range s.topo.teardown(context.Background()) {
		fmt.Fprintln(s.log, "cleanup:", w)
	}
}

// Search probes (--search-probe) poll every probeInterval for probeTimeout
// at most.
const (
	probeInterval = 20 * time.Millisecond
	probeTimeout  = 5 * time.Second
)

// searchProbe searches, as m's sender and inside m's conversation, for the
// word only m carries until a result comes back, and records how long
// after m's ACK(saved) (at savedAt) that was; not found within
// probeTimeout (or refused) counts as a miss. A too_many_requests answer
// waits as asked.
func (s *session) searchProbe(ctx context.Context, rec *recorder, m *msgRec, savedAt int64) {
	body := map[string]any{"keyword": m.probe, "conversation_id": m.to.conv, "limit": 1}
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		var out struct {
			Results []json.RawMessage `json:"results"`
		}
		err := s.topo.api.call(ctx, http.MethodPost, "/msg/search", m.from.token, body, &out)
		now := s.clk.now()
		switch {
		case err == nil && len(out.Results) > 0:
			rec.recordProbe(m, true, now-savedAt)
			return
		case err != nil && reasonOf(err) != "too_many_requests", now-savedAt >= int64(probeTimeout):
			rec.recordProbe(m, false, 0)
			return
		}
		select {
		case <-ctx.Done():
			rec.recordProbe(m, false, 0)
			return
		case <-t.C:
		}
	}
}
