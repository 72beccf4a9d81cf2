package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/wire"
)

// TestRunServesAndShutsDownGracefully runs the server on a real listener:
// body limits as a client over TCP sees them, then a shutdown that lets an
// in-flight request finish and refuses new connections.
func TestRunServesAndShutsDownGracefully(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A shutdown timeout far above what the test waits: an idle keep-alive
	// connection must be closed at once, not waited for.
	e := newEnv(t, func(d *gateway.Deps) { d.Listener = ln; d.HTTP.ShutdownTimeout = time.Minute })
	entered, release := make(chan struct{}), make(chan struct{})
	e.srv.Route("GET", "/slow", func(ctx context.Context, c *app.RequestContext) {
		close(entered)
		<-release
		api.WriteOK(c, "done")
	}, false)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- e.srv.Run(ctx) }()

	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, string, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	// The listener is open before Run, so the first request just works.
	if code, body, err := get("/healthz"); err != nil || code != 200 {
		t.Fatalf("healthz: %d %s %v", code, body, err)
	}

	post := func(body string) (int, string) {
		resp, err := client.Post(base+"/user/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	pad := func(n int) string {
		return `{"nickname":"x","password":"plum-tart-9","avatar":"` + strings.Repeat("a", n) + `"}`
	}
	// Just over the limit: the documented envelope.
	code, body := post(pad(testMaxBody))
	var env wire.Envelope
	if err := json.Unmarshal([]byte(body), &env); code != 400 || err != nil || env.ErrMsg != string(wire.ReasonBodyTooLong) {
		t.Fatalf("body over the limit: %d %s", code, body)
	}
	// Far over it: Hertz refuses before reading it all (413).
	if code, body := post(pad(3 * testMaxBody)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("body far over the limit: %d %s", code, body)
	}

	// An idle keep-alive connection: one request answered, nothing since.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	idleResp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || idleResp.StatusCode != 200 || idleResp.Close {
		t.Fatalf("keep-alive request: %v %v", idleResp, err)
	}
	_ = idleResp.Body.Close()

	// Shutdown with a request in flight.
	slow := make(chan string, 1)
	go func() {
		code, body, err := get("/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		slow <- http.StatusText(code) + " " + body
	}()
	<-entered
	cancel()
	// New connections are refused once the listener closes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err != nil {
			break
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting 5s after shutdown began")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	// The idle connection is closed by the server while the slow request
	// still runs (well within the minute-long shutdown timeout).
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("idle keep-alive connection during shutdown: read %d, %v; want EOF", n, err)
	}
	select {
	case err := <-runErr:
		t.Fatalf("Run returned (%v) before the in-flight request finished", err)
	default:
	}
	close(release)
	if got := <-slow; !strings.HasPrefix(got, "OK ") || !strings.Contains(got, "done") {
		t.Fatalf("in-flight request during shutdown: %s", got)
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
