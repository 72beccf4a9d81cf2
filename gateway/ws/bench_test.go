package ws

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/wire"
)

// benchAuth accepts any token as the user id, on platform 1. With deep set
// it first uses about 10 KiB of the handshake goroutine's stack, as the
// server's real handshake does (middleware, JWT verification, a Redis round
// trip), so the goroutine that goes on to serve the session starts from a
// 16 KiB stack.
type benchAuth struct{ deep bool }

func (a benchAuth) Authenticate(_ context.Context, token string) (string, int, string, time.Time, error) {
	if a.deep {
		burnStack(40)
	}
	return token, 1, "jti-" + token, time.Time{}, nil
}

// burnStack recurses n frames of about 260 bytes each.
//
//go:noinline
func burnStack(n int) byte {
	var pad [256]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return burnStack(n-1) + pad[(n*7)%len(pad)]
}

func benchConfig() configs.WS {
	cfg := testConfig()
	cfg.LoginPolicy = configs.LoginMulti
	return cfg
}

// benchEnv is newEnv with benchAuth.
func benchEnv(b *testing.B, cfg configs.WS, standard bool, readBuf int) *env {
	return benchEnvAuth(b, cfg, standard, readBuf, benchAuth{})
}

// benchEnvAuth is benchEnv with the given benchAuth.
func benchEnvAuth(b *testing.B, cfg configs.WS, standard bool, readBuf int, auth benchAuth) *env {
	b.Helper()
	raiseFileLimit()
	opts := []envOption{func(s *envSettings) { s.deps.Auth = auth; s.deps.Tokens = nil }}
	if standard {
		opts = append(opts, withStandardTransport())
	}
	e := newEnv(b, cfg, opts...)
	if readBuf > 0 {
		e.srv.upgrader.ReadBufferSize = readBuf
	}
	return e
}

var transports = []struct {
	name     string
	standard bool
}{{"netpoll", false}, {"standard", true}}

// memory is the process's heap+stack in use, its stacks alone and its
// resident set, in bytes, after two collections (each halves at most once
// the stack of a goroutine using less than a quarter of it).
func memory() (heapStack, stack, rss uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse, ms.StackInuse, readRSS()
}

func readRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkIdleConnMemory measures the server's memory per idle connection
// at 2,000 connections (clients in a child process), per transport, read
// buffer size and handshake depth (deep: the handshake grows the
// goroutine's stack to 16 KiB, as the server's does). Run with -benchtime=1x -count=N: each
// iteration connects and disconnects 2,000 clients. Figures in
// docs/gateway.md, "Memory per connection".
func BenchmarkIdleConnMemory(b *testing.B) {
	const n = 2000
	for _, tr := range transports {
		for _, v := range []struct {
			readBuf int
			deep    bool
		}{{4096, false}, {readBufferSize, false}, {readBufferSize, true}} {
			b.Run(fmt.Sprintf("%s/readbuf=%d/deep_handshake=%t", tr.name, v.readBuf, v.deep), func(b *testing.B) {
				e := benchEnvAuth(b, benchConfig(), tr.standard, v.readBuf, benchAuth{deep: v.deep})
				var perHeap, perStack, perRSS, perG []float64
				for i := 0; i < b.N; i++ {
					heap0, stack0, rss0 := memory()
					g0 := runtime.NumGoroutine()
					ch := startChild(b, "idle", e.addr, n)
					waitFor(b, 60*time.Second, "registrations", func() bool { return e.srv.ConnCount() == n })
					_, _, _ = memory() // the first collection halves a stack once
					heap1, stack1, rss1 := memory()
					g1 := runtime.NumGoroutine()
					perHeap = append(perHeap, float64(int64(heap1)-int64(heap0))/n)
					perStack = append(perStack, float64(int64(stack1)-int64(stack0))/n)
					perRSS = append(perRSS, float64(int64(rss1)-int64(rss0))/n)
					perG = append(perG, float64(g1-g0)/n)
					ch.stop()
					waitFor(b, 60*time.Second, "disconnects", func() bool { return e.srv.ConnCount() == 0 })
				}
				b.ReportMetric(median(perHeap), "heap+stack-B/conn")
				b.ReportMetric(median(perStack), "stack-B/conn")
				b.ReportMetric(median(perRSS), "rss-B/conn")
				b.ReportMetric(median(perG), "goroutines/conn")
			})
		}
	}
}

// BenchmarkNoopRoundTrip measures request -> response latency of a handler
// that does nothing, on one connection, with 2,000 idle connections on the
// same server.
func BenchmarkNoopRoundTrip(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			e := benchEnv(b, benchConfig(), tr.standard, 0)
			e.srv.Handle(reqEcho, func(context.Context, *Conn, json.RawMessage) (any, error) { return nil, nil })
			idle := startChild(b, "idle", e.addr, 2000)
			defer idle.stop()
			c, h := e.dialRaw("token=probe&platform_id=1", dialOptions{})
			if h != nil {
				b.Fatalf("dial: %+v", h)
			}
			req := []byte(`{"req_identifier":9001,"msg_incr":"1","operation_id":"op","data":{}}`)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				c.send(string(req))
				c.nextRaw(5 * time.Second)
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkPushThroughput pushes frames to 1,000 connections (readers in a
// child process) with PushToUsers and reports deliveries per second, end
// to end (until the clients have read them). Publishing is paced in
// batches that fit the send queue, so no connection is closed as slow.
func BenchmarkPushThroughput(b *testing.B) {
	const conns = 1000
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			cfg := benchConfig()
			e := benchEnv(b, cfg, tr.standard, 0)
			ch := startChild(b, "read", e.addr, conns)
			defer ch.stop()
			waitFor(b, 60*time.Second, "registrations", func() bool { return e.srv.ConnCount() == conns })
			users := make([]string, conns)
			for i := range users {
				users[i] = "c" + strconv.Itoa(i)
			}
			f := mustEncode(wire.Response{ReqIdentifier: wire.PushMsg, Data: map[string]any{
				"conversation_id": "sg_bench", "seq": 1, "sender_id": "alice", "msg_type": 101,
				"content": map[string]string{"text": strings.Repeat("x", 100)}, "status": "normal",
			}})
			batch := cfg.HighWater / 2
			ctx := context.Background()
			base := ch.count.Load()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if got := e.srv.PushToUsers(ctx, users, f, ""); got != conns {
					b.Fatalf("push %d reached %d connections", i, got)
				}
				if (i+1)%batch == 0 {
					want := base + int64(i+1-batch)*conns
					waitFor(b, 60*time.Second, "clients catching up", func() bool { return ch.count.Load() >= want })
				}
			}
			want := base + int64(b.N)*conns
			waitFor(b, 60*time.Second, "all deliveries", func() bool { return ch.count.Load() >= want })
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N*conns)/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pushes/s")
			if e.srv.ConnCount() != conns {
				b.Fatalf("%d connections left; some were closed as slow", e.srv.ConnCount())
			}
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
