package ws

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The benchmarks keep their client connections in a child process (this
// test binary re-executed), so the parent's memory figures are the
// server's alone. The child speaks just enough WebSocket: the handshake,
// and reading unmasked server frames.
const childEnv = "NEXO_WS_BENCH_CHILD" // "mode addr n"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		raiseFileLimit()
		if err := runChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// raiseFileLimit lifts the soft open-files limit to the hard one: 2,000
// connections need 2,000 descriptors on each side.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

// runChild dials n connections as users c0..c{n-1} (benchAuth accepts the
// user id as token), prints "ready", and then, in mode "read", counts the
// text frames it receives and prints "count N" as the total grows. It
// exits when its stdin closes.
func runChild(spec string) error {
	parts := strings.Fields(spec)
	if len(parts) != 3 {
		return fmt.Errorf("bad spec %q", spec)
	}
	mode, addr := parts[0], parts[1]
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		return err
	}
	var total atomic.Int64
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, br, err := childDial(addr, "c"+strconv.Itoa(i))
		if err != nil {
			return fmt.Errorf("dial %d: %w", i, err)
		}
		conns = append(conns, c)
		if mode == "read" {
			go childRead(br, &total)
		}
	}
	fmt.Println("ready")
	if mode == "read" {
		go func() {
			last := int64(-1)
			for {
				if t := total.Load(); t != last {
					fmt.Println("count", t)
					last = t
				}
				time.Sleep(time.Millisecond) // reporting interval
			}
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		_ = c.Close()
	}
	return nil
}

func childDial(addr, user string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	req := "GET /ws?token=" + user + "&platform_id=1 HTTP/1.1\r\nHost: " + addr +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(c, 4096)
	status, err := br.ReadString('\n')
	if err != nil {
		return nil, nil, err
	}
	if !strings.Contains(status, " 101 ") {
		return nil, nil, fmt.Errorf("handshake: %q", status)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, nil, err
		}
		if line == "\r\n" {
			return c, br, nil
		}
	}
}

// childRead counts text frames (server frames are unmasked and, from this
// server, never fragmented).
func childRead(br *bufio.Reader, total *atomic.Int64) {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(br, hdr[:2]); err != nil {
			return
		}
		op, n := hdr[0]&0x0f, int64(hdr[1]&0x7f)
		switch n {
		case 126:
			if _, err := io.ReadFull(br, hdr[:2]); err != nil {
				return
			}
			n = int64(binary.BigEndian.Uint16(hdr[:2]))
		case 127:
			if _, err := io.ReadFull(br, hdr[:8]); err != nil {
				return
			}
			n = int64(binary.BigEndian.Uint64(hdr[:8]))
		}
		if _, err := br.Discard(int(n)); err != nil {
			return
		}
		if op == 1 {
			total.Add(1)
		}
	}
}

// child is a running client process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	count atomic.Int64
	ready chan struct{}
	done  chan error
}

// startChild runs n client connections in a child process and waits until
// they are all connected.
func startChild(tb testing.TB, mode, addr string, n int) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", childEnv, mode, addr, n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	ch := &child{cmd: cmd, stdin: stdin, ready: make(chan struct{}), done: make(chan error, 1)}
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case bytes.Equal(line, []byte("ready")):
				once.Do(func() { close(ch.ready) })
			case bytes.HasPrefix(line, []byte("count ")):
				v, _ := strconv.ParseInt(string(line[6:]), 10, 64)
				ch.count.Store(v)
			}
		}
		ch.done <- cmd.Wait()
	}()
	select {
	case <-ch.ready:
	case err := <-ch.done:
		tb.Fatalf("bench child exited before connecting: %v", err)
	case <-time.After(60 * time.Second):
		tb.Fatal("bench child did not connect within 60s")
	}
	return ch
}

// stop closes the child's connections and waits for it to exit.
func (c *child) stop() {
	_ = c.stdin.Close()
	select {
	case err := <-c.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			fmt.Fprintln(os.Stderr, "bench child:", err)
		}
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
	}
}
