package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nexo-im/nexo/services/privacy"
	"github.com/nexo-im/nexo/store"
)

// benchEnvInt reads a non-negative integer from the environment, else def.
func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// benchPost posts body with a bearer token or the API key and decodes the
// envelope.
func benchPost(client *http.Client, url, body, auth string) (int, map[string]any, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var env map[string]any
	err = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env, err
}

// gatedLease is the cleaner's own lease with a gate in front: while the
// gate is shut, the renewal the cleaner makes before each batch waits, so
// the benchmark can pause a sweep between two batches and let it go on.
type gatedLease struct {
	privacy.Lease
	mu      sync.Mutex
	open    bool
	opened  chan struct{} // closed when the gate opens
	parked  chan struct{} // signalled when the cleaner waits at the shut gate
	batches int           // renewals let through: about one per batch
}

func newGatedLease(l privacy.Lease) *gatedLease {
	return &gatedLease{Lease: l, opened: make(chan struct{}), parked: make(chan struct{}, 1)}
}

// Acquire waits while the gate is shut, then takes or renews the lease.
func (g *gatedLease) Acquire(ctx context.Context, holder string, ttl time.Duration) (bool, error) {
	for {
		g.mu.Lock()
		if g.open {
			g.batches++
			g.mu.Unlock()
			return g.Lease.Acquire(ctx, holder, ttl)
		}
		opened := g.opened
		g.mu.Unlock()
		select {
		case g.parked <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-opened:
		}
	}
}

// set opens or shuts the gate; shutting it forgets an earlier parking.
func (g *gatedLease) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if open == g.open {
		return
	}
	g.open = open
	if open {
		close(g.opened)
		return
	}
	g.opened = make(chan struct{})
	select {
	case <-g.parked:
	default:
	}
}

// retentionSettle is the start of every window whose sends count in
// neither kind: the batch in flight when the gate shut, and the backlog
// either side left, settle in it.
const retentionSettle = time.Second

// BenchmarkRetentionCleanerUnderLoad measures what the retention cleaner
// costs the message path while it deletes a large expired history, the
// issue's scenario at full scale ("1,000,000 expired messages deleted
// while 1,000 msg/s flow, ACK p99 within 1.5×, nothing unexpired
// deleted"):
//
//	NEXO_BENCH_EXPIRED=1000000 NEXO_BENCH_RATE=1000 NEXO_BENCH_WINDOW=15 \
//	  go test ./cmd/app -run '^$' -bench RetentionCleanerUnderLoad -benchtime 1x -timeout 60m -v
//
// It seeds NEXO_BENCH_EXPIRED (default 20,000) messages two hours old,
// with their search rows, then sends single-chat texts open-loop at
// NEXO_BENCH_RATE (default 200) a second over WebSocket, on the two-phase
// path (NEXO_BENCH_TWO_PHASE=0: the synchronous one). Windows of
// NEXO_BENCH_WINDOW seconds (default 5) alternate without the cleaner and
// with it — the cleaner's own sweep (lease, batches, pause) held between
// two batches while a window without runs — until the sweep is done, and
// one more without closes. It reports the median over windows of each
// kind of the ACK p50/p99 and of the accepted → saved lag, the sweep's
// time and rate, and checks that exactly the expired messages were
// deleted and every message the load sent was answered, saved and kept.
// NEXO_BENCH_PAUSE_MS and NEXO_BENCH_BATCH override retention.clean_pause
// and clean_batch, NEXO_BENCH_LEASE_BLOCK seq.lease_block;
// NEXO_BENCH_SEARCH=0 turns search off. Without -v go test keeps only the
// first lines of the log. docs/bench/retention.md has the figures.
func BenchmarkRetentionCleanerUnderLoad(b *testing.B) {
	expired := benchEnvInt("NEXO_BENCH_EXPIRED", 20_000)
	rate := max(1, benchEnvInt("NEXO_BENCH_RATE", 200))
	window := time.Duration(max(2, benchEnvInt("NEXO_BENCH_WINDOW", 5))) * time.Second
	twoPhase := os.Getenv("NEXO_BENCH_TWO_PHASE") != "0"
	for range b.N {
		cfg := realConfig(b)
		cfg.ServerAPI.Keys = []string{apiKey}
		cfg.TwoPhase.Enabled = twoPhase
		// NEXO_BENCH_SEARCH=0: no search table, so a sweep deletes
		// messages alone.
		cfg.Search.Enabled = os.Getenv("NEXO_BENCH_SEARCH") != "0"
		cfg.Retention.MaxAge = time.Hour
		cfg.Retention.CleanInterval = time.Hour // the benchmark drives the sweep
		if pause := benchEnvInt("NEXO_BENCH_PAUSE_MS", -1); pause >= 0 {
			cfg.Retention.CleanPause = time.Duration(pause) * time.Millisecond
		}
		// NEXO_BENCH_PAUSE_RATIO: retention.clean_pause_ratio (whole numbers).
		if r := benchEnvInt("NEXO_BENCH_PAUSE_RATIO", -1); r >= 0 {
			cfg.Retention.CleanPauseRatio = float64(r)
		}
		if n := benchEnvInt("NEXO_BENCH_BATCH", 0); n > 0 {
			cfg.Retention.CleanBatch = n
		}
		// NEXO_BENCH_LEASE_BLOCK: seq.lease_block, whose lease is a
		// database commit on the ACK's path once a block is used up.
		if n := benchEnvInt("NEXO_BENCH_LEASE_BLOCK", 0); n > 0 {
			cfg.Seq.LeaseBlock = int64(n)
		}
		// NEXO_BENCH_CHECK_WAIT_MS: two_phase.duplicate_check_wait, how
		// long a send's ACK may wait on the database's duplicate check.
		if ms := benchEnvInt("NEXO_BENCH_CHECK_WAIT_MS", -1); ms >= 0 {
			cfg.TwoPhase.DuplicateCheckWait = time.Duration(ms) * time.Millisecond
		}
		a, base, logs, _ := runAppLevel(b, cfg, slog.LevelInfo)
		// The app's own cleaner sweeps once at start (an empty history);
		// after that it idles for clean_interval.
		select {
		case <-a.cleaner.Swept():
		case <-time.After(30 * time.Second):
			b.Fatalf("the app's cleaner did not make its first sweep\nlogs:\n%s", logs)
		}
		users, tokens := retentionUsers(b, base, 50)

		old := time.Now().Add(-2 * time.Hour).UnixMilli()
		began := time.Now()
		search := a.db.Gorm.Migrator().HasTable("message_search")
		seedExpired(b, a, expired, old, search)
		b.Logf("seeded %d expired messages (search rows: %v) in %v", expired, search, time.Since(began).Round(time.Millisecond))

		load := dialRetLoad(b, base, users, tokens, twoPhase)
		stopLoad := make(chan struct{})
		loadDone := make(chan struct{})
		go func() { defer close(loadDone); load.run(rate, stopLoad) }()

		gate := newGatedLease(store.NewLease(a.rdb, a.keys, "retention"))
		cleaner := privacy.NewCleaner(a.privacy, gate, a.consumerName(), privacy.CleanerConfig{Interval: cfg.Retention.CleanInterval,
			Batch: cfg.Retention.CleanBatch, Pause: cfg.Retention.CleanPause, PauseRatio: cfg.Retention.CleanPauseRatio}, a.log)
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		var swept privacy.SweepResult
		sweepDone := make(chan struct{})
		go func() {
			defer close(sweepDone)
			if !cleaner.Once(ctx) {
				b.Error("the cleaner did not hold its lease")
				return
			}
			swept = <-cleaner.Swept()
		}()

		// A warm-up window counted nowhere, then without / with the
		// cleaner until the sweep is done, then one more without. A window
		// with the cleaner ends early when the sweep does.
		var windows []*retWindow
		var active time.Duration
		measure := func(cleaner, counted bool) {
			w := newRetWindow(cleaner)
			var stop <-chan struct{} // nil: the window runs its full length
			start := time.Now()
			end := time.After(window)
			if cleaner {
				stop = sweepDone
				gate.set(true)
			}
			select {
			case <-time.After(retentionSettle):
			case <-stop:
			}
			if counted {
				w.from = time.Now()
				load.cur.Store(w)
			}
			select {
			case <-end:
			case <-stop:
			}
			load.cur.Store(nil)
			if counted {
				w.to = time.Now()
				windows = append(windows, w)
				// The window before this one has its answers by now: on
				// stderr at once, so a run stopped early keeps its figures
				// (go test prints a benchmark's log only at its end).
				if n := len(windows); n >= 2 {
					load.mu.Lock()
					fmt.Fprintln(os.Stderr, "progress:", retWindowLine(n-2, windows[n-2]))
					load.mu.Unlock()
				}
			}
			if cleaner {
				gate.set(false)
				select {
				case <-gate.parked:
				case <-sweepDone:
				}
				active += time.Since(start)
			}
		}
		measure(false, false)
		loadAtStart := loadAverage()
		sweepStart := time.Now()
		for done := false; !done; {
			measure(false, true)
			measure(true, true)
			select {
			case <-sweepDone:
				done = true
			default:
			}
		}
		sweepTook := time.Since(sweepStart)
		measure(false, true)
		close(stopLoad)
		<-loadDone

		sent, answered, saved := load.settle(time.Minute)
		load.mu.Lock()
		failures, failed, maxLate, readErrs := load.failures, load.failed, load.maxLate, load.readErrs
		load.mu.Unlock()
		if len(readErrs) > 0 {
			b.Fatalf("a session ended during the load: %v", readErrs[0])
		}
		if answered != sent || failures > 0 {
			b.Fatalf("%d sent, %d answered, %d refused (%v)", sent, answered, failures, failed)
		}
		if saved != sent {
			b.Fatalf("%d sent, only %d ACK(saved) arrived within a minute", sent, saved)
		}
		if swept.Deleted != expired {
			b.Fatalf("the sweep deleted %d, want the %d expired", swept.Deleted, expired)
		}
		var oldLeft, kept, loadKept int64
		cutoff := time.Now().Add(-time.Hour).UnixMilli()
		db := a.db.Gorm
		if err := db.Raw("SELECT COUNT(*) FROM messages WHERE send_at < ?", cutoff).Scan(&oldLeft).Error; err != nil {
			b.Fatal(err)
		}
		if err := db.Raw("SELECT COUNT(*) FROM messages").Scan(&kept).Error; err != nil {
			b.Fatal(err)
		}
		if err := db.Raw("SELECT COUNT(*) FROM messages WHERE send_at >= ?", cutoff).Scan(&loadKept).Error; err != nil {
			b.Fatal(err)
		}
		if oldLeft != 0 || loadKept != int64(sent) || kept != int64(sent) {
			b.Fatalf("after the sweep: %d expired left (want 0), %d of the load's %d messages kept, %d in all", oldLeft, loadKept, sent, kept)
		}
		if search {
			var searchLeft int64
			if err := db.Raw("SELECT COUNT(*) FROM message_search WHERE send_at < ?", cutoff).Scan(&searchLeft).Error; err != nil {
				b.Fatal(err)
			}
			if searchLeft != 0 {
				b.Fatalf("%d search rows of expired messages left", searchLeft)
			}
		}

		for i, w := range windows {
			b.Log(retWindowLine(i, w))
		}
		minSpan := (window - retentionSettle) / 2
		off, on := summarize(windows, false, minSpan), summarize(windows, true, minSpan)
		gate.mu.Lock()
		batches := gate.batches
		gate.mu.Unlock()
		b.Logf("two_phase %v (duplicate_check_wait %v), %d msg/s, clean_batch %d, clean_pause %v, clean_pause_ratio %v, windows of %v; load average at the start %s, at the end %s "+
			"(lag: ACK(accepted) → ACK(saved), 0 on the synchronous path, whose ACK is the save)",
			twoPhase, cfg.TwoPhase.DuplicateCheckWait, rate, cfg.Retention.CleanBatch, cfg.Retention.CleanPause, cfg.Retention.CleanPauseRatio, window, loadAtStart, loadAverage())
		b.Logf("without the cleaner (median of %d windows, %d sends): ACK p50 %.2f ms p99 %.2f ms, lag p50 %.2f ms p99 %.2f ms (pooled p99: ACK %.2f, lag %.2f)",
			off.windows, off.sends, off.ackP50, off.ackP99, off.lagP50, off.lagP99, off.pooledAckP99, off.pooledLag99)
		b.Logf("while sweeping      (median of %d windows, %d sends): ACK p50 %.2f ms p99 %.2f ms, lag p50 %.2f ms p99 %.2f ms (pooled p99: ACK %.2f, lag %.2f)",
			on.windows, on.sends, on.ackP50, on.ackP99, on.lagP50, on.lagP99, on.pooledAckP99, on.pooledLag99)
		b.Logf("ACK p99 ratio %.2f×, lag p99 ratio %.2f×; the sweep deleted %d in %d batches, %v running (%.0f/s) within %v; %d sent, all answered and saved, the pacer at most %v late; %d kept",
			on.ackP99/max(off.ackP99, 0.001), on.lagP99/max(off.lagP99, 0.001), swept.Deleted, batches, active.Round(time.Millisecond),
			float64(swept.Deleted)/active.Seconds(), sweepTook.Round(time.Second), sent, maxLate.Round(time.Millisecond), kept)
		b.ReportMetric(off.ackP99, "p99-ms-without")
		b.ReportMetric(on.ackP99, "p99-ms-with")
		b.ReportMetric(on.ackP99/max(off.ackP99, 0.001), "p99-ratio")
		if twoPhase {
			b.ReportMetric(off.lagP99, "lag-p99-ms-without")
			b.ReportMetric(on.lagP99, "lag-p99-ms-with")
		}
		b.ReportMetric(float64(swept.Deleted)/active.Seconds(), "deleted/s")
	}
}

// loadAverage is the machine's 1, 5 and 15 minute load averages ("?"
// where /proc/loadavg is missing): the benchmark's figures depend on what
// else runs.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// retentionUsers creates n users through the server API and returns their
// IDs and tokens.
func retentionUsers(b *testing.B, base string, n int) (users, tokens []string) {
	b.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range n {
		id := fmt.Sprint("rb", i)
		if code, env, err := benchPost(client, base+"/api/user/create", fmt.Sprintf(`{"user_id":%q,"nickname":"x"}`, id), "apikey "+apiKey); err != nil || code != 200 {
			b.Fatalf("create %s: %d %v %v", id, code, env, err)
		}
		_, env, err := benchPost(client, base+"/api/token", fmt.Sprintf(`{"user_id":%q,"platform_id":5}`, id), "apikey "+apiKey)
		if err != nil {
			b.Fatal(err)
		}
		users = append(users, id)
		tokens = append(tokens, fmt.Sprint(env["data"].(map[string]any)["token"]))
	}
	return users, tokens
}

// seedExpired inserts n messages sent at sentAt (Unix ms) in 1,000
// conversations of their own (seqs 1..), with their search rows when
// search is on, in multi-row statements from a few connections. IDs have
// the length of real ones (36 characters) and rise like UUIDv7s do.
func seedExpired(b *testing.B, a *App, n int, sentAt int64, search bool) {
	b.Helper()
	const perStmt, workers = 2000, 3
	var g errgroup.Group
	g.SetLimit(workers)
	for done := 0; done < n; done += perStmt {
		g.Go(func() error {
			var msgs, docs strings.Builder
			msgs.WriteString("INSERT INTO messages (conversation_id, seq, client_msg_id, server_msg_id, sender_id, recv_id, session_type, msg_type, content_text, send_at, created_at, updated_at) VALUES ")
			docs.WriteString("INSERT INTO message_search (conversation_id, seq, session_type, sender_id, recv_id, group_id, msg_type, send_at, field, body) VALUES ")
			for k := done; k < min(done+perStmt, n); k++ {
				if k > done {
					msgs.WriteByte(',')
					docs.WriteByte(',')
				}
				conv, seq, sender := fmt.Sprintf("si_old%d_zz", k%1000), k/1000+1, fmt.Sprint("old", k%1000)
				fmt.Fprintf(&msgs, "('%s',%d,'c0000000-0000-7000-8000-%012d','01900000-0000-7000-8000-%012d','%s','zz',1,101,'an old message',%d,%d,%d)",
					conv, seq, k, k, sender, sentAt, sentAt, sentAt)
				fmt.Fprintf(&docs, "('%s',%d,1,'%s','zz','',101,%d,'','an old message')", conv, seq, sender, sentAt)
			}
			if err := a.db.Gorm.Exec(msgs.String()).Error; err != nil {
				return fmt.Errorf("seed messages: %w", err)
			}
			if search {
				if err := a.db.Gorm.Exec(docs.String()).Error; err != nil {
					return fmt.Errorf("seed search rows: %w", err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// retWindowLine is one window's figures, as the benchmark logs them.
func retWindowLine(i int, w *retWindow) string {
	kind := "without"
	if w.cleaner {
		kind = "with   "
	}
	return fmt.Sprintf("window %2d %s %5.1fs: %5d sends, ACK p50 %7.2f ms p99 %8.2f ms, lag p50 %7.2f ms p99 %8.2f ms",
		i, kind, w.to.Sub(w.from).Seconds(), w.ack.TotalCount(), ms(w.ack, 50), ms(w.ack, 99), ms(w.lag, 50), ms(w.lag, 99))
}
