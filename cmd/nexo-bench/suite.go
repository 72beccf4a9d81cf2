package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// SuiteIndex is docs/bench/suite.json: what the last `make bench` ran and
// where each result is. summarize reads it.
type SuiteIndex struct {
	Tool      string       `json:"tool"`
	Schema    int          `json:"schema"`
	StartedAt string       `json:"started_at"`
	Seconds   float64      `json:"seconds"`
	Command   string       `json:"command"`
	Quick     bool         `json:"quick"`
	Machine   Machine      `json:"machine"`
	Entries   []SuiteEntry `json:"entries"`
	// Reruns are later `--only` invocations whose steps replaced the
	// first run's.
	Reruns []Rerun `json:"reruns,omitempty"`
}

// Rerun is one `--only` invocation merged into the index.
type Rerun struct {
	Command   string  `json:"command"`
	StartedAt string  `json:"started_at"`
	Seconds   float64 `json:"seconds"`
}

// SuiteEntry is one step of the suite: a run, a comparison or the
// maximum-rate search, with its JSON and HTML files (relative names).
type SuiteEntry struct {
	Kind  string `json:"kind"` // run | compare | ramp | cluster
	Name  string `json:"name"`
	Title string `json:"title"`
	File  string `json:"file"`
	HTML  string `json:"html"`
	OK    bool   `json:"ok"`
	// Error is why the step could not run (its files are then absent).
	Error string `json:"error,omitempty"`
}

// suite runs the standard steps against one in-process server.
type suite struct {
	dir       string
	quick     bool
	quietFor  time.Duration // --wait-quiet
	srv       *inProcessServer
	so        serverOptions // how srv was started: steps with a server of their own reuse it
	pairRate  float64       // --pair-rate
	hookBatch int           // --webhook-batch
	// baselineURL and candidateURL: the baseline-* steps (baseline.go).
	baselineURL, candidateURL string
	stdout                    io.Writer
	log                       io.Writer
	index                     SuiteIndex
}

// base returns the run flags' defaults with the suite's common settings.
func (s *suite) base() options {
	var o options
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	o.register(fs)
	o.InProcess, o.URL = true, s.srv.URL()
	o.Warmup, o.Duration, o.Grace = time.Second, 5*time.Second, 5*time.Second
	return o
}

// scaled shortens d for --quick (a smoke test of the suite itself).
func (s *suite) scaled(d time.Duration) time.Duration {
	if s.quick {
		return max(d/5, time.Second)
	}
	return d
}

func suiteCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nexo-bench suite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("out-dir", "docs/bench", "where results go (JSON, HTML, results.md, suite.json)")
	readme := fs.String("readme", "README.md", "regenerate this file's performance section afterwards (\"\" skips)")
	quick := fs.Bool("quick", false, "fifth of every duration and smaller loads: checks the suite runs, measures little")
	only := fs.String("only", "", "comma-separated step names to run (default: all; see docs/bench/README.md)")
	pairRate := fs.Float64("pair-rate", 5000, "msg/s of the steps that compare two servers (webhooks-5k, redis-cluster-5k, limits-5k): their issues name 5,000; a lower rate shows the cost below saturation")
	hookBatch := fs.Int("webhook-batch", 128, "webhooks.batch_size of the webhooks-5k step's server (1: one POST per event, the default of webhooks.batch_size)")
	baselineURL := fs.String("baseline-url", "", "a baseline build's deployment (e.g. main before a change, as `nexo serve`): adds the baseline-* steps, which compare it (A) with --candidate-url (B) against the light-load, group and memory targets")
	candidateURL := fs.String("candidate-url", "", "the candidate build's deployment for the baseline-* steps (default: the suite's in-process server, whose CPU then includes the load generator)")
	quietFor := fs.Duration("wait-quiet", 30*time.Second, "before each step, wait up to this long for the shared machine to be under 20% busy (0 = do not wait)")
	var so serverOptions
	so.register(fs)
	fresh := fs.Lookup("fresh-db")
	fresh.DefValue = "true" // the suite starts from an empty database unless told otherwise
	_ = fresh.Value.Set("true")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	srv, err := startInProcess(ctx, so, stderr)
	if err != nil {
		return err
	}
	defer srv.Close()
	s := &suite{dir: *dir, quick: *quick, srv: srv, so: so, stdout: stdout, log: stderr, quietFor: *quietFor, pairRate: *pairRate, hookBatch: *hookBatch,
		baselineURL: *baselineURL, candidateURL: *candidateURL}
	s.index = SuiteIndex{Tool: "nexo-bench", Schema: 1, StartedAt: time.Now().UTC().Format(time.RFC3339),
		Command: "nexo-bench suite " + strings.Join(args, " "), Quick: *quick, Machine: machine()}
	started := time.Now()
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var failed []string
	for _, st := range s.steps() {
		if len(want) > 0 && !want[st.name] {
			continue
		}
		fmt.Fprintf(stderr, "\n### suite step %s: %s\n", st.name, st.title)
		if *quietFor > 0 {
			waited, busy := waitQuiet(ctx, *quietFor, quietBusyPct)
			fmt.Fprintf(stderr, "waited %.0fs for the machine to quiet down (last second %.0f%% busy)\n", waited.Seconds(), busy)
		}
		e, err := st.run(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.Name, e.Title = st.name, st.title
		if err != nil { // one step's failure (e.g. a route this server lacks) must not lose the others
			fmt.Fprintf(stderr, "step %s failed: %v\n", st.name, err)
			e.OK, e.Error = false, err.Error()
		}
		if !e.OK {
			failed = append(failed, st.name)
		}
		s.index.Entries = append(s.index.Entries, e)
	}
	s.index.Seconds = round1(time.Since(started).Seconds())
	if len(want) > 0 {
		s.mergeEarlier(filepath.Join(*dir, "suite.json"))
	}
	if err := writeJSON(filepath.Join(*dir, "suite.json"), &s.index); err != nil {
		return err
	}
	if err := summarize(*dir, *readme, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "suite done in %.0fs; results in %s\n", time.Since(started).Seconds(), *dir)
	if len(failed) > 0 {
		return fmt.Errorf("steps that did not run or counted a correctness failure: %s", strings.Join(failed, ", "))
	}
	return nil
}

// quietBusyPct is the machine-wide busy share under which the suite
// considers the shared machine quiet enough to start a step.
const quietBusyPct = 20

type suiteStep struct {
	name, title string
	run         func(ctx context.Context) (SuiteEntry, error)
}

// steps is the standard suite (docs/bench/README.md lists it with the
// reasons for each duration).
func (s *suite) steps() []suiteStep {
	// The storm runs first, while the process holds little else: its memory
	// per connection is a difference of two samples of the whole process.
	steps := []suiteStep{
		{"connect-10k", "connection storm: 10,000 sessions, then 10 s idle (client in a child process)",
			func(ctx context.Context) (SuiteEntry, error) { return s.connect(ctx, "connect-10k") }},
	}
	// Above its capacity (about 800 msg/s here) the synchronous path queues
	// everything it cannot take, and every run drains completely before the
	// next so no backlog leaks into it: the 5k and 10k windows are short to
	// keep those drains (backlog ÷ capacity) near half a minute.
	for _, c := range []struct {
		rate           float64
		warmup, window time.Duration
	}{{1000, time.Second, 5 * time.Second}, {5000, 500 * time.Millisecond, 2 * time.Second}, {10000, 500 * time.Millisecond, 2 * time.Second}} {
		name := fmt.Sprintf("single-%dk", int(c.rate/1000))
		steps = append(steps, suiteStep{name, fmt.Sprintf("single chat, 100 pairs, open loop %g msg/s for %gs: two-phase on (A) vs off (B), 3 runs each", c.rate, c.window.Seconds()),
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Pairs, o.Rate, o.Compare = 100, c.rate, "two_phase.enabled=false"
				o.Warmup, o.Duration = c.warmup, s.scaled(c.window)
				return s.compare(ctx, name, &o)
			}})
	}
	steps = append(steps,
		suiteStep{"max-rate", "highest sustained persisted rate (ACK(saved) p99 < 100 ms), two-phase on and off",
			func(ctx context.Context) (SuiteEntry, error) { return s.ramp(ctx, "max-rate") }},
		suiteStep{"closed-50", "50 pairs, closed loop, one message in flight per sender (until ACK), 20 s",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Pairs, o.Rate, o.Inflight, o.Duration = 50, 0, 1, s.scaled(20*time.Second)
				return s.run(ctx, "closed-50", &o)
			}},
		suiteStep{"closed-50-saved", "50 pairs, closed loop, one message in flight per sender until ACK(saved), 10 s",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Pairs, o.Rate, o.Inflight, o.Await, o.Duration = 50, 0, 1, ackSaved, s.scaled(10*time.Second)
				return s.run(ctx, "closed-50-saved", &o)
			}},
		suiteStep{"open-50x10", "50 pairs × 10 msg/s per sender (500 msg/s), open loop, 20 s",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Pairs, o.Rate, o.Duration = 50, 500, s.scaled(20*time.Second)
				return s.run(ctx, "open-50x10", &o)
			}},
		suiteStep{"mix-50x10", "50 pairs, 500 sends/s, open loop, 10 s: 10 % of the sends actions (edit, reaction, delete), 10 % of the messages pictures",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Pairs, o.Rate, o.Duration, o.PictureShare, o.ActionShare = 50, 500, s.scaled(10*time.Second), 0.1, 0.1
				return s.run(ctx, "mix-50x10", &o)
			}},
		suiteStep{"group-10x10", "10 groups × 11 members, all online (10 receivers per message), 500 msg/s",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Scenario, o.Groups, o.Members, o.Rate, o.Duration = "group", 10, 11, 500, s.scaled(10*time.Second)
				return s.run(ctx, "group-10x10", &o)
			}},
		suiteStep{"group-500", "one 500-member group, all online, 20 msg/s (about 10,000 deliveries/s)",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Scenario, o.Groups, o.Members, o.Rate, o.Duration = "group", 1, 500, 20, s.scaled(10*time.Second)
				return s.run(ctx, "group-500", &o)
			}},
		suiteStep{"webhooks-5k", "single chat, 100 pairs, 5,000 msg/s for 2 s: webhooks off (A) vs after_send and offline_push to a localhost receiver (B), 3 runs each",
			func(ctx context.Context) (SuiteEntry, error) { return s.webhooks(ctx, "webhooks-5k") }},
		suiteStep{"search-1k", "single chat, 50 pairs, 1,000 msg/s, one message in 50 searched for after its ACK(saved): searchable p99 within 1 s",
			func(ctx context.Context) (SuiteEntry, error) { return s.searchable(ctx, "search-1k") }},
		suiteStep{"search-cost", "50 pairs, closed loop until ACK(saved), 10 s: search on (A) vs off (B), 3 runs each: saved msg/s on ≥ 0.9× off",
			func(ctx context.Context) (SuiteEntry, error) { return s.searchCost(ctx, "search-cost") }},
		suiteStep{"push-cost", "50 pairs, closed loop until ACK(saved), 10 s: built-in push off (A) vs Web Push configured (B), 3 runs each: saved msg/s on ≥ 0.95× off",
			func(ctx context.Context) (SuiteEntry, error) { return s.pushCost(ctx, "push-cost") }},
		suiteStep{"redis-cluster-5k", "single chat, 100 pairs, 5,000 msg/s for 2 s: Redis standalone (A) vs a 3-master Redis Cluster with a replica each (B), 3 runs each",
			func(ctx context.Context) (SuiteEntry, error) { return s.redisCluster(ctx, "redis-cluster-5k") }},
		suiteStep{"limits-5k", "single chat, 100 pairs, 5,000 msg/s for 2 s: per-user send limit off (A) vs the default 100/s (B), 3 runs each",
			func(ctx context.Context) (SuiteEntry, error) { return s.limits(ctx, "limits-5k") }},
		suiteStep{"cluster", "3 instances on one database and one Redis prefix: CPU per 1,000 msgs at 1-3 instances, local vs cross-instance delivery (3 runs each), completeness at 1,000 msg/s, kick/logout propagation (100 samples)",
			func(ctx context.Context) (SuiteEntry, error) { return s.cluster(ctx, "cluster") }},
		suiteStep{"reconnect", "50 pairs at 500 msg/s; half the receivers dropped for 2 s, then gap fill by pull",
			func(ctx context.Context) (SuiteEntry, error) {
				o := s.base()
				o.Scenario, o.Pairs, o.Rate, o.Duration = "reconnect", 50, 500, s.scaled(9*time.Second)
				return s.run(ctx, "reconnect", &o)
			}},
	)
	return append(steps, s.baselineSteps()...)
}

func (s *suite) files(name string) (string, string, SuiteEntry) {
	e := SuiteEntry{File: name + ".json", HTML: name + ".html"}
	return filepath.Join(s.dir, e.File), filepath.Join(s.dir, e.HTML), e
}

// run runs one scenario on a fresh topology and writes its files.
func (s *suite) run(ctx context.Context, name string, o *options) (SuiteEntry, error) {
	o.Label = name
	if s.quick {
		o.Rate /= 5
	}
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "run"
	sess, err := newSession(ctx, o, o.URL, s.log)
	if err != nil {
		return e, err
	}
	defer sess.close()
	if sess.mode, err = s.srv.SetMode(""); err != nil {
		return e, err
	}
	res, err := sess.runMessages(ctx, name)
	if err != nil {
		return e, err
	}
	writeTable(s.stdout, &res)
	e.OK = res.OK
	return e, writeOutputs(jsonPath, htmlPath, &res, name, tableText(&res), resultCharts(&res))
}

// compare runs o.Compare against the server's configured mode, alternating.
func (s *suite) compare(ctx context.Context, name string, o *options) (SuiteEntry, error) {
	o.Label = name
	if s.quick {
		o.Rate, o.Repeat = o.Rate/5, 1
	}
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "compare"
	sess, err := newSession(ctx, o, o.URL, s.log)
	if err != nil {
		return e, err
	}
	defer sess.close()
	c, err := runCompare(ctx, s.log, o, sess, sess, "", o.Compare, s.srv)
	if err != nil {
		return e, err
	}
	writeCompare(s.stdout, c)
	e.OK = c.A.Median["failures"]+c.B.Median["failures"] == 0
	return e, writeOutputs(jsonPath, htmlPath, c, name, compareText(c), compareChart(c))
}

// connect runs the connection storm from a child process: the client's
// ten thousand sockets then do not count against this process's file
// limit, and the server's /metrics show the server's memory alone.
func (s *suite) connect(ctx context.Context, name string) (SuiteEntry, error) {
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "run"
	n, idle := 10000, s.scaled(10*time.Second)
	if s.quick {
		n = 1000
	}
	self, err := os.Executable()
	if err != nil {
		return e, err
	}
	cmd := exec.CommandContext(ctx, self, "run", "--scenario", "connect", "--url", s.srv.URL(),
		"--connections", fmt.Sprint(n), "--duration", idle.String(), "--label", name,
		"--out", jsonPath, "--html", htmlPath)
	cmd.Stdout, cmd.Stderr = s.stdout, s.log
	if err := cmd.Run(); err != nil {
		// jsonPath may still hold an earlier suite's result: never take it
		// for this run's.
		return e, fmt.Errorf("connection storm: %w", err)
	}
	var res Result
	if err := readJSON(jsonPath, &res); err != nil {
		return e, err
	}
	// The child only knew a URL: record that the server was this process's.
	res.Target.InProcess = true
	if res.Target.Mode, err = s.srv.SetMode(""); err != nil {
		return e, err
	}
	e.OK = res.OK
	return e, writeJSON(jsonPath, &res)
}

// mergeEarlier keeps, after an --only run, the steps of the previous
// suite.json that were not run again, so the summary still covers the
// whole suite; the index's command and duration then name both runs.
func (s *suite) mergeEarlier(path string) {
	var prev SuiteIndex
	if readJSON(path, &prev) != nil || prev.Quick != s.index.Quick {
		return
	}
	ran := map[string]bool{}
	for _, e := range s.index.Entries {
		ran[e.Name] = true
	}
	var merged []SuiteEntry
	for _, e := range prev.Entries {
		if !ran[e.Name] {
			merged = append(merged, e)
			continue
		}
		for _, n := range s.index.Entries {
			if n.Name == e.Name {
				merged = append(merged, n)
			}
		}
		delete(ran, e.Name)
	}
	for _, e := range s.index.Entries {
		if ran[e.Name] { // a step the earlier run did not have
			merged = append(merged, e)
		}
	}
	s.index.Entries = merged
	s.index.Reruns = append(prev.Reruns, Rerun{Command: s.index.Command, StartedAt: s.index.StartedAt, Seconds: s.index.Seconds})
	s.index.Command, s.index.StartedAt, s.index.Seconds = prev.Command, prev.StartedAt, prev.Seconds
}
