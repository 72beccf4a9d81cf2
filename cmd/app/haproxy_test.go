package app

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store/storetest"
)

// haproxyPath is Debian's HAProxy (package haproxy; .ci/run installs it).
const haproxyPath = "/usr/sbin/haproxy"

// startHAProxy runs deploy/haproxy.cfg — the file compose.yaml mounts —
// with its bind address and servers pointed at this test's instances, and
// returns the frontend's base URL once it answers.
func startHAProxy(t *testing.T, backends []string) string {
	t.Helper()
	if _, err := exec.LookPath(haproxyPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the load balancer test needs %s (apt-get install haproxy): %v", haproxyPath, err)
		}
		t.Skipf("skipping: %s not found (apt-get install haproxy)", haproxyPath)
	}
	raw, err := os.ReadFile("../../deploy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cfg := strings.Replace(string(raw), "bind :8080", fmt.Sprintf("bind 127.0.0.1:%d", port), 1)
	cfg = strings.Replace(cfg, "maxconn 100000", "maxconn 1000", 1) // a test's file limit
	servers := regexp.MustCompile(`(?m)^\s*server nexo.*\n`)
	if n := len(servers.FindAllString(cfg, -1)); n != 3 {
		t.Fatalf("deploy/haproxy.cfg has %d server lines, want the 3 of compose.yaml", n)
	}
	cfg = servers.ReplaceAllString(cfg, "")
	for i, b := range backends {
		cfg += fmt.Sprintf("    server nexo%d %s check\n", i+1, strings.TrimPrefix(b, "http://"))
	}
	path := t.TempDir() + "/haproxy.cfg"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &storetest.LogBuffer{}
	cmd := exec.Command(haproxyPath, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out)
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := client.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		select {
		case <-exited:
			t.Fatalf("haproxy exited:\n%s", out)
		case <-time.After(100 * time.Millisecond): // polling with a deadline
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy at %s did not serve /readyz within 30 s:\n%s", base, out)
		}
	}
}

// TestHAProxyInFrontOfTheCluster (issue 11 item 7): the shipped HAProxy
// configuration in front of two instances. Clients that connect through it
// land on both instances and chat across them; when one instance drains,
// its /readyz turns HAProxy away from it, its WebSocket clients get close
// 1012, and they reconnect through HAProxy to the other instance at once.
func TestHAProxyInFrontOfTheCluster(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, 2, func(i int, c *configs.Config) {
		if i == 0 {
			c.Cluster.DrainDelay = 3 * time.Second // > HAProxy's 1 s check interval
		}
	})
	lb := startHAProxy(t, []string{nodes[0].base, nodes[1].base})

	tokA, tokB := user(t, lb, "ann"), user(t, lb, "ben")
	ann, ben := dial(t, lb, "ann", tokA), dial(t, lb, "ben", tokB)
	// Round robin: the two connections are on different instances.
	conns := func(i int) int { return nodes[i].app.ws.ConnCount() }
	waitConns := func(want0, want1 int, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for conns(0) != want0 || conns(1) != want1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: connections per instance %d and %d, want %d and %d", what, conns(0), conns(1), want0, want1)
			}
			time.Sleep(10 * time.Millisecond) // polling with a deadline: registration follows the upgrade
		}
	}
	waitConns(1, 1, "round robin through HAProxy")
	if r := ann.send("ben", "m1", "through the proxy"); r.ErrCode != 0 {
		t.Fatalf("send: %d %s", r.ErrCode, r.ErrMsg)
	}
	ben.waitPushes(2001, "the message across instances", func(f []frame) bool { return len(f) >= 1 })

	// n1 drains: everyone on it gets 1012 and reconnects through HAProxy,
	// which by then sends every new connection to n2.
	onN1, other := ann, ben // which client is on n1 is the proxy's choice
	if !nodes[0].app.ws.Online("ann") {
		onN1, other = ben, ann
	}
	stopped := make(chan struct{})
	go func() { _ = nodes[0].stop(); close(stopped) }()
	within(t, 15*time.Second, "close of the connection on the draining instance", onN1.closed)
	var ce *websocket.CloseError
	if !errors.As(onN1.readErr(), &ce) || ce.Code != 1012 {
		t.Fatalf("close: %v, want 1012 (service restart)", onN1.readErr())
	}
	again := dial(t, lb, onN1.userID, onN1.token)
	waitConns(0, 2, "after the reconnect through HAProxy")
	if r := other.send(onN1.userID, "m2", "after the drain"); r.ErrCode != 0 {
		t.Fatalf("send after the drain: %d %s", r.ErrCode, r.ErrMsg)
	}
	again.waitPushes(2001, "a message on the new connection", func(f []frame) bool { return len(f) >= 1 })
	within(t, 30*time.Second, "n1's shutdown", stopped)
}
