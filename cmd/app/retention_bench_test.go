package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
)

// benchEnvInt reads a positive integer from the environment, else def.
func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
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

// load sends single-chat texts at rate per second while running() holds, spread over
// users, and returns every send's latency (the ACK, which on the
// synchronous path comes after the database commit) and the failures.
func load(b *testing.B, base string, tokens []string, rate int, running func() bool, tag string) ([]time.Duration, int) {
	b.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var mu sync.Mutex
	var lat []time.Duration
	failed := 0
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; running(); i++ {
		next := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(next)) // pacing the open-loop load, not synchronising
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			from, to := i%len(tokens), (i+1)%len(tokens)
			body := fmt.Sprintf(`{"client_msg_id":"%s-%d","session_type":1,"recv_id":"rb%d","msg_type":101,"content":{"text":"load %d"}}`, tag, i, to, i)
			began := time.Now()
			code, env, err := benchPost(client, base+"/msg/send", body, "Bearer "+tokens[from])
			took := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || code != 200 || env["err_code"] != 0.0 {
				failed++
				return
			}
			lat = append(lat, took)
		}(i)
	}
	wg.Wait()
	slices.Sort(lat)
	return lat, failed
}

func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(float64(len(lat))*p))]
}

// BenchmarkRetentionCleanerUnderLoad measures what the retention cleaner
// costs the message path: the ACK latency of a steady single-chat load on
// the synchronous path (each ACK waits for its database commit, the path
// the cleaner's deletes compete with) without the cleaner, then while the
// cleaner deletes NEXO_BENCH_EXPIRED (default 200,000) expired messages in
// batches of retention.clean_batch (the load runs as long as the sweep
// does). It reports both p99s, their ratio, the
// cleaner's rate, and checks nothing unexpired was deleted. Run it alone:
//
//	go test ./cmd/app -run '^$' -bench RetentionCleanerUnderLoad -benchtime 1x
//
// NEXO_BENCH_RATE (default 300 msg/s) sizes the load, NEXO_BENCH_SECONDS
// (default 20) the run without the cleaner. docs/bench/retention.md has the figures.
func BenchmarkRetentionCleanerUnderLoad(b *testing.B) {
	expired := benchEnvInt("NEXO_BENCH_EXPIRED", 200_000)
	rate := benchEnvInt("NEXO_BENCH_RATE", 300)
	secs := time.Duration(benchEnvInt("NEXO_BENCH_SECONDS", 20)) * time.Second
	for range b.N {
		cfg := realConfig(b)
		cfg.ServerAPI.Keys = []string{apiKey}
		cfg.TwoPhase = configs.TwoPhase{Enabled: false, FailOpen: true}
		cfg.Retention.MaxAge = time.Hour
		cfg.Retention.CleanInterval = time.Hour // the benchmark drives the sweep
		if ms := benchEnvInt("NEXO_BENCH_PAUSE_MS", -1); ms >= 0 {
			cfg.Retention.CleanPause = time.Duration(ms) * time.Millisecond
		}
		if n := benchEnvInt("NEXO_BENCH_BATCH", 0); n > 0 {
			cfg.Retention.CleanBatch = n
		}
		a, base, _, _ := runApp(b, cfg)
		client := &http.Client{Timeout: 10 * time.Second}
		const users = 20
		tokens := make([]string, users)
		for i := range users {
			id := fmt.Sprint("rb", i)
			if code, env, err := benchPost(client, base+"/api/user/create", fmt.Sprintf(`{"user_id":%q,"nickname":"x"}`, id), "apikey "+apiKey); err != nil || code != 200 {
				b.Fatalf("create %s: %d %v %v", id, code, env, err)
			}
			_, env, err := benchPost(client, base+"/api/token", fmt.Sprintf(`{"user_id":%q,"platform_id":5}`, id), "apikey "+apiKey)
			if err != nil {
				b.Fatal(err)
			}
			tokens[i] = fmt.Sprint(env["data"].(map[string]any)["token"])
		}

		// The expired history: 2 hours old, in 1,000 conversations of its
		// own (seqs 1..), inserted directly in multi-row statements.
		old := time.Now().Add(-2 * time.Hour).UnixMilli()
		began := time.Now()
		const perStmt = 1000
		for done := 0; done < expired; done += perStmt {
			var sb strings.Builder
			args := make([]any, 0, perStmt*8)
			sb.WriteString("INSERT INTO messages (conversation_id, seq, client_msg_id, server_msg_id, sender_id, recv_id, session_type, msg_type, content_text, send_at, created_at, updated_at) VALUES ")
			for k := 0; k < perStmt && done+k < expired; k++ {
				n := done + k
				if k > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString("(?,?,?,?,?,?,1,101,'an old message',?,?,?)")
				conv := fmt.Sprintf("si_old%d_zz", n%1000)
				args = append(args, conv, n/1000+1, fmt.Sprint("oc", n), fmt.Sprint("os", n), fmt.Sprint("old", n%1000), "zz", old, old, old)
			}
			if err := a.db.Gorm.Exec(sb.String(), args...).Error; err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("inserted %d expired messages in %v", expired, time.Since(began))

		until := time.Now().Add(secs)
		base1, failed1 := load(b, base, tokens, rate, func() bool { return time.Now().Before(until) }, "a")
		// The cleaner sweeps while the same load runs again.
		sweepDone := make(chan struct{})
		var swept int
		var sweepTook time.Duration
		go func() {
			defer close(sweepDone)
			t0 := time.Now()
			// The cleaner's own path: its lease (taken at start), its
			// batches and its pause between them.
			if !a.cleaner.Once(context.Background()) {
				b.Error("the cleaner did not hold its lease")
				return
			}
			res := <-a.cleaner.Swept()
			sweepTook = time.Since(t0)
			swept = res.Deleted
		}()
		with, failed2 := load(b, base, tokens, rate, func() bool {
			select {
			case <-sweepDone:
				return false
			default:
				return true
			}
		}, "b")
		<-sweepDone
		if swept != expired {
			b.Fatalf("the sweep deleted %d, want the %d expired", swept, expired)
		}
		var kept int64
		if err := a.db.Gorm.Raw("SELECT COUNT(*) FROM messages").Scan(&kept).Error; err != nil {
			b.Fatal(err)
		}
		if want := int64(len(base1) + len(with)); kept < want {
			b.Fatalf("%d messages left, fewer than the %d the load saved: an unexpired one was deleted", kept, want)
		}
		p99a, p99b := pct(base1, 0.99), pct(with, 0.99)
		b.Logf("load %d msg/s: without the cleaner (%v) p50 %v p99 %v (%d sent, %d failed); while it sweeps p50 %v p99 %v (%d sent, %d failed); "+
			"the cleaner deleted %d in %v (%.0f/s), %d unexpired kept",
			rate, secs, pct(base1, 0.5), p99a, len(base1), failed1, pct(with, 0.5), p99b, len(with), failed2,
			swept, sweepTook, float64(swept)/sweepTook.Seconds(), kept)
		b.ReportMetric(float64(p99a.Microseconds())/1000, "p99-ms-without")
		b.ReportMetric(float64(p99b.Microseconds())/1000, "p99-ms-with")
		b.ReportMetric(float64(p99b)/float64(max(p99a, 1)), "p99-ratio")
		b.ReportMetric(float64(swept)/sweepTook.Seconds(), "deleted/s")
	}
}
