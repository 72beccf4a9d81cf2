package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// UploadResult is the upload scenario: direct uploads (POST
// /object/upload) of each size class by concurrent clients.
type UploadResult struct {
	Tool        string             `json:"tool"`
	Scenario    string             `json:"scenario"`
	StartedAt   string             `json:"started_at"`
	URL         string             `json:"url"`
	Concurrency int                `json:"concurrency"`
	Classes     []UploadClassStats `json:"classes"`
	Machine     Machine            `json:"machine"`
	OK          bool               `json:"ok"`
}

// UploadClassStats is one size class: uploads done and failed, wall time,
// file bytes per second (MB/s, 10^6) and the latency of one upload.
type UploadClassStats struct {
	Bytes    int              `json:"bytes"`
	Uploads  int64            `json:"uploads"`
	Failures map[string]int64 `json:"failures"`
	Seconds  float64          `json:"seconds"`
	MBps     float64          `json:"mb_per_s"`
	Latency  Percentiles      `json:"latency"`
}

// uploadCmd is `nexo-bench upload`: registers one user per client, then
// for each size class sends --count uploads from --concurrency clients
// and reports MB/s and the latency percentiles per class.
func uploadCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nexo-bench upload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8080", "the server (uploads on: objects.backend, or the embedded default)")
	sizes := fs.String("sizes", "64KiB,1MiB,8MiB", "size classes, comma-separated (KiB/MiB suffixes)")
	count := fs.Int("count", 200, "uploads per size class")
	conc := fs.Int("concurrency", 8, "concurrent clients")
	out := fs.String("out", "", "write the result as JSON to this file")
	password := fs.String("password", "bench-Passw0rd!x", "password of the bench users")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	var classes []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := parseSize(strings.TrimSpace(s))
		if err != nil {
			return usageError{fmt.Errorf("--sizes: %w", err)}
		}
		classes = append(classes, n)
	}
	if *count < 1 || *conc < 1 {
		return usageError{errors.New("--count and --concurrency must be >= 1")}
	}
	a := newAPI(*url)
	tag := randomTag()
	tokens := make([]string, *conc)
	for i := range tokens {
		id := fmt.Sprintf("up%s-%d", tag, i)
		if err := a.register(ctx, id, *password, false); err != nil {
			return fmt.Errorf("register: %w", err)
		}
		tok, err := a.login(ctx, id, *password, 1)
		if err != nil {
			return fmt.Errorf("login: %w", err)
		}
		tokens[i] = tok
	}
	res := UploadResult{Tool: "nexo-bench", Scenario: "upload", StartedAt: time.Now().UTC().Format(time.RFC3339), URL: *url,
		Concurrency: *conc, Machine: machine(), OK: true}
	for _, size := range classes {
		st := uploadClass(ctx, a, tokens, size, *count)
		if len(st.Failures) > 0 {
			res.OK = false
		}
		res.Classes = append(res.Classes, st)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "size\tuploads\tfailed\tMB/s\tp50 ms\tp99 ms\tmax ms")
	for _, c := range res.Classes {
		var failed int64
		for _, n := range c.Failures {
			failed += n
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\n", sizeName(c.Bytes), c.Uploads, failed, c.MBps, c.Latency.P50, c.Latency.P99, c.Latency.Max)
	}
	_ = tw.Flush()
	if *out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if !res.OK {
		return errFailedRun
	}
	return nil
}

// uploadClass sends count uploads of size bytes from len(tokens) clients.
func uploadClass(ctx context.Context, a *api, tokens []string, size, count int) UploadClassStats {
	data := make([]byte, size)
	_, _ = rand.Read(data) // random bytes: sniffed as application/octet-stream, no thumbnail
	hist := newLatencyHist()
	var mu sync.Mutex
	failures := map[string]int64{}
	var next, done atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(count) && ctx.Err() == nil {
				t0 := time.Now()
				err := postUpload(ctx, a, tok, data)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					failures[reasonOf(err)]++
				} else {
					hist.record(int64(d))
					done.Add(1)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	return UploadClassStats{Bytes: size, Uploads: done.Load(), Failures: failures, Seconds: round3(secs),
		MBps: round3(float64(done.Load()) * float64(size) / secs / 1e6), Latency: hist.summary()}
}

// postUpload is one POST /object/upload of data.
func postUpload(ctx context.Context, a *api, token string, data []byte) error {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("file", "bench.bin")
	if err != nil {
		return err
	}
	_, _ = part.Write(data)
	_ = w.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", a.base+"/object/upload", &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.hc.Do(req)
	if err != nil {
		return &apiError{Reason: "transport", Detail: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return &apiError{Status: resp.StatusCode, Reason: "bad_response"}
	}
	if env.ErrCode != 0 {
		return &apiError{Status: resp.StatusCode, Code: env.ErrCode, Reason: env.ErrMsg}
	}
	return nil
}

func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "KiB"):
		mult, s = 1<<10, strings.TrimSuffix(s, "KiB")
	case strings.HasSuffix(s, "MiB"):
		mult, s = 1<<20, strings.TrimSuffix(s, "MiB")
	}
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a size (e.g. 64KiB, 8MiB)", s)
	}
	return n * mult, nil
}

func sizeName(n int) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
