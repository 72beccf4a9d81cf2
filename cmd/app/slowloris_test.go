package app

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// closedByServer reports whether the server ends c within d (a read
// returns EOF or a reset rather than timing out on our side).
func closedByServer(t *testing.T, c net.Conn, d time.Duration) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1024)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue // a response (e.g. 408) before the close
		}
		return !errors.Is(err, os.ErrDeadlineExceeded)
	}
}

// TestSlowClientsAreCut (issue 13 #5): a silent connection, a partial
// request and a partial WebSocket handshake are closed once
// http.read_header_timeout has passed since accept; an upgraded WebSocket
// outlives it.
func TestSlowClientsAreCut(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.HTTP.ReadHeaderTimeout = 500 * time.Millisecond
	_, base := startAppValue(t, cfg)
	addr := strings.TrimPrefix(base, "http://")
	tok := user(t, base, "alice")
	ws := dial(t, base, "alice", tok) // upgraded: no longer under the header deadline

	dialRaw := func(first string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if first != "" {
			if _, err := c.Write([]byte(first)); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	slow := map[string]net.Conn{
		"silent":            dialRaw(""),
		"partial request":   dialRaw("GET /healthz HTTP/1.1\r\nHost: x\r\n"),
		"partial handshake": dialRaw("GET /ws?platform_id=5&token=" + tok + " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"),
	}
	start := time.Now()
	for name, c := range slow {
		if !closedByServer(t, c, 10*time.Second) {
			t.Fatalf("%s connection still open 10 s after accept", name)
		}
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("slow connections closed after %v, before the 500 ms deadline", d)
	}
	// The WebSocket is past the deadline and still answers.
	if f := ws.request(1001, map[string]any{"conversation_ids": []string{}}); f.ReqIdentifier != 1001 {
		t.Fatalf("websocket after the header deadline: %+v", f)
	}

}

// TestConnectionCapPerIP: connections over http.max_conns_per_ip are closed
// at accept and counted in nexo_http_connections_refused_total.
func TestConnectionCapPerIP(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.HTTP.MaxConnsPerIP = 3
	a, base := startAppValue(t, cfg)
	addr := strings.TrimPrefix(base, "http://")
	var conns []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		conns = append(conns, c)
	}
	if !closedByServer(t, conns[3], 5*time.Second) {
		t.Fatal("the fourth connection was not refused")
	}
	if closedByServer(t, conns[0], 200*time.Millisecond) {
		t.Fatal("a connection within the cap was closed")
	}
	if n := gauge(t, a, "nexo_http_connections_refused_total", "per_ip"); n != 1 {
		t.Fatalf("refused{cap=per_ip} = %v, want 1", n)
	}
	// Closing one frees its slot.
	_ = conns[0].Close()
	waitUntil(t, 5*time.Second, "slot released", func() bool { return gauge(t, a, "nexo_http_connections_open", "") == 2 })
}

// gauge reads a counter or gauge from the app's registry (label value
// matched against any label; "" for an unlabelled metric).
func gauge(t *testing.T, a *App, name, label string) float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || l.GetValue() == label
			}
			if !match {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
