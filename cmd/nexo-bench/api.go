package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// api is the HTTP half of the public protocol: accounts, tokens, groups,
// pulls and the Prometheus endpoint. Every call is bounded by its ctx.
type api struct {
	base string // scheme://host[:port], no trailing slash: HTTP calls
	// bases are every instance of a --url list; WebSocket connections go
	// to them round-robin by session index (a cluster without a load
	// balancer in front).
	bases []string
	hc    *http.Client
	// metricsToken is sent with every /metrics scrape: the server's
	// metrics.token (metricsTokenFromEnv).
	metricsToken string
}

// benchMetricsToken is metrics.token of the in-process servers (benchEnv):
// a server outside the embedded mode serves /metrics only with a token or
// on a private listener, and the bench reads its memory and cluster
// series there. Not a secret: those servers listen on 127.0.0.1.
const benchMetricsToken = "nexo-bench-metrics-token"

// metricsTokenFromEnv is the token to scrape /metrics with: the bench's
// NEXO_METRICS_TOKEN (a server under test elsewhere, or in-process servers
// given their own), else benchMetricsToken.
func metricsTokenFromEnv() string {
	if tok := os.Getenv("NEXO_METRICS_TOKEN"); tok != "" {
		return tok
	}
	return benchMetricsToken
}

// newAPI returns a client for baseURL (http:// or https://), or for a
// comma-separated list of them: HTTP calls go to the first, WebSocket
// connections to each in turn (wsURL).
func newAPI(baseURL string) *api {
	var bases []string
	for _, b := range strings.Split(baseURL, ",") {
		if b = strings.TrimRight(strings.TrimSpace(b), "/"); b != "" {
			bases = append(bases, b)
		}
	}
	if len(bases) == 0 {
		bases = []string{""}
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
	return &api{base: bases[0], bases: bases, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}, metricsToken: metricsTokenFromEnv()}
}

// apiError is a failed call: the HTTP status and the envelope's reason.
type apiError struct {
	Status int
	Code   int
	Reason string
	Detail string
}

func (e *apiError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Reason, e.Detail)
	}
	return fmt.Sprintf("HTTP %d %s", e.Status, e.Reason)
}

// reasonOf returns the wire reason of err, or a short class for transport
// errors, for the "errors by reason" counters.
func reasonOf(err error) string {
	var ae *apiError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ae):
		return ae.Reason
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "transport"
	}
}

// envelope is every HTTP answer: err_code 0 and the result in data, or
// err_code != 0, err_msg the reason and data {reason, detail}.
type envelope struct {
	ErrCode int             `json:"err_code"`
	ErrMsg  string          `json:"err_msg"`
	Data    json.RawMessage `json:"data"`
}

// call sends body (JSON, or nothing when nil) and decodes data into out
// (skipped when nil). A non-zero err_code or a non-JSON answer is an
// *apiError.
func (a *api) call(ctx context.Context, method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read: %w", method, path, err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return &apiError{Status: resp.StatusCode, Reason: "bad_response", Detail: fmt.Sprintf("%s %s: %.200s", method, path, raw)}
	}
	if env.ErrCode != 0 {
		var d struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(env.Data, &d)
		return &apiError{Status: resp.StatusCode, Code: env.ErrCode, Reason: env.ErrMsg, Detail: d.Detail}
	}
	if out != nil && len(env.Data) > 0 {
		if err := json.Unmarshal(env.Data, out); err != nil {
			return fmt.Errorf("%s %s: decode data: %w", method, path, err)
		}
	}
	return nil
}

// register creates userID; an existing user (user_exists) is not an error
// when reuse is set, so a --prefix run can pick up its earlier accounts.
func (a *api) register(ctx context.Context, userID, password string, reuse bool) error {
	err := a.call(ctx, "POST", "/user/register", "", map[string]string{
		"user_id": userID, "nickname": userID, "password": password,
	}, nil)
	if reuse && reasonOf(err) == "user_exists" {
		return nil
	}
	return err
}

// login returns a token of userID on platform (1–10).
func (a *api) login(ctx context.Context, userID, password string, platform int) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	err := a.call(ctx, "POST", "/auth/login", "", map[string]any{
		"user_id": userID, "password": password, "platform_id": platform,
	}, &out)
	if err == nil && out.Token == "" {
		err = &apiError{Status: 200, Reason: "bad_response", Detail: "login answered no token"}
	}
	return out.Token, err
}

// logout revokes token.
func (a *api) logout(ctx context.Context, token string) error {
	return a.call(ctx, "POST", "/auth/logout", token, nil, nil)
}

// createGroup creates a group owned by the token's user with memberIDs and
// returns its group_id.
func (a *api) createGroup(ctx context.Context, token, name string, memberIDs []string) (string, error) {
	var out struct {
		GroupID string `json:"group_id"`
	}
	err := a.call(ctx, "POST", "/group/create", token, map[string]any{"name": name, "member_ids": memberIDs}, &out)
	if err == nil && out.GroupID == "" {
		err = &apiError{Status: 200, Reason: "bad_response", Detail: "group/create answered no group_id"}
	}
	return out.GroupID, err
}

// dismissGroup deletes a group the token's user owns.
func (a *api) dismissGroup(ctx context.Context, token, groupID string) error {
	return a.call(ctx, "POST", "/group/dismiss", token, map[string]string{"group_id": groupID}, nil)
}

// pull reads a window of one conversation (GET /msg/pull).
func (a *api) pull(ctx context.Context, token string, p pullData) (pullResult, error) {
	q := url.Values{"conversation_id": {p.ConversationID}}
	if p.BeginSeq > 0 {
		q.Set("begin_seq", strconv.FormatInt(p.BeginSeq, 10))
	}
	if p.EndSeq > 0 {
		q.Set("end_seq", strconv.FormatInt(p.EndSeq, 10))
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	var out pullResult
	err := a.call(ctx, "GET", "/msg/pull?"+q.Encode(), token, nil, &out)
	return out, err
}

// wsURL is the WebSocket endpoint of session c: c.base when the topology
// placed it, else instance c.idx mod the --url list's length. By index, not
// by dial order (sessions dial in parallel), so the placement is the same
// on every run and a reconnect returns to the same instance; a pair's
// sender and receiver are consecutive sessions, so with two or more
// instances they are never on the same one.
func (a *api) wsURL(c *conn) string {
	u := c.base
	if u == "" {
		u = a.bases[c.idx%len(a.bases)]
	}
	u = strings.TrimRight(u, "/")
	switch {
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	}
	q := url.Values{"token": {c.token}, "send_id": {c.user}, "platform_id": {strconv.Itoa(c.platform)}}
	return u + "/ws?" + q.Encode()
}

// serverMemory scrapes /metrics for the server's resident memory, Go heap
// in use and goroutines. ok is false when the endpoint or the series is
// missing (a deployment may not expose it): memory is then not reported.
func (a *api) serverMemory(ctx context.Context) (m serverMem, ok bool) {
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+"/metrics", nil)
	if err != nil {
		return m, false
	}
	req.Header.Set("Authorization", "Bearer "+a.metricsToken)
	resp, err := a.hc.Do(req)
	if err != nil {
		return m, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, false
	}
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "process_resident_memory_bytes":
			m.RSS, found = int64(v), true
		case "process_cpu_seconds_total":
			m.CPUSeconds = v
		case "go_memstats_heap_inuse_bytes":
			m.HeapInuse = int64(v)
		case "go_memstats_stack_inuse_bytes":
			m.StackInuse = int64(v)
		case "go_goroutines":
			m.Goroutines = int64(v)
		}
	}
	return m, found || m.HeapInuse > 0
}

// serverMem is one /metrics sample.
type serverMem struct {
	RSS        int64 `json:"rss_bytes"`
	HeapInuse  int64 `json:"heap_inuse_bytes"`
	StackInuse int64 `json:"stack_inuse_bytes"`
	Goroutines int64 `json:"goroutines"`
	// CPUSeconds is the process's CPU time so far (process_cpu_seconds_total).
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
}

// metricSeries scrapes /metrics for every series whose name starts with
// prefix, keyed by the series as written (name and labels). Empty when
// the endpoint is missing or refuses.
func (a *api) metricSeries(ctx context.Context, prefix string) map[string]float64 {
	out := map[string]float64{}
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+"/metrics", nil)
	if err != nil {
		return out
	}
	req.Header.Set("Authorization", "Bearer "+a.metricsToken)
	resp, err := a.hc.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
