package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// RedisMetrics counts what a Redis topology does under the client: command
// errors per server, MOVED/ASK redirects (a slot moved: reshard or
// failover), new connections per server (reconnects after a failure), and
// master changes seen (a sentinel failover, or a cluster slot answered by a
// new master). A nil *RedisMetrics records nothing.
type RedisMetrics struct {
	errors    *prometheus.CounterVec
	redirects *prometheus.CounterVec
	dials     *prometheus.CounterVec
	failovers prometheus.Counter
	// commands counts what is sent, by command name: with the stages'
	// message counter it gives Redis calls per message (docs/pipeline.md,
	// Observability).
	commands *prometheus.CounterVec
	cmdMu    sync.RWMutex
	cmdByNm  map[string]prometheus.Counter

	mu     sync.Mutex
	master string // sentinel: the last master dialled
}

// NewRedisMetrics registers the metrics on reg (nil: unregistered), with
// nexo_redis_info{mode} = 1 naming redis.mode, so dashboards can split
// latencies by topology.
func NewRedisMetrics(reg prometheus.Registerer, mode string) *RedisMetrics {
	m := &RedisMetrics{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Subsystem: "redis", Name: "command_errors_total",
			Help: "Redis commands that failed, by server address and kind (conn, timeout, moved, ask, tryagain, clusterdown, readonly, loading, other).",
		}, []string{"node", "kind"}),
		redirects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Subsystem: "redis", Name: "redirects_total",
			Help: "MOVED and ASK redirects answered by Redis Cluster nodes (slots moving: reshard or failover).",
		}, []string{"kind"}),
		dials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Subsystem: "redis", Name: "dials_total",
			Help: "New connections opened per server; a burst after errors is a reconnect.",
		}, []string{"node", "result"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Subsystem: "redis", Name: "commands_total",
			Help: "Redis commands sent, by command (evalsha, xreadgroup, xack, ...); a pipeline counts each of its commands, a script call counts once (what it runs inside Redis is in INFO commandstats).",
		}, []string{"command"}),
		cmdByNm: map[string]prometheus.Counter{},
		failovers: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Subsystem: "redis", Name: "master_changes_total",
			Help: "Sentinel mode: master changes seen (the master the sentinels name moved to another address). Cluster mode counts slot moves in redirects_total.",
		}),
	}
	if reg != nil {
		info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "nexo", Subsystem: "redis", Name: "info",
			Help: "Always 1; the mode label is redis.mode (standalone, cluster, sentinel).",
		}, []string{"mode"})
		info.WithLabelValues(mode).Set(1)
		reg.MustRegister(m.errors, m.redirects, m.dials, m.failovers, m.commands, info)
	}
	return m
}

// errorKind classifies a command error for the errors metric; "" is not an
// error worth counting (nil, redis.Nil, a caller's cancellation).
func errorKind(err error) string {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return ""
	}
	msg := err.Error()
	for _, p := range []struct{ prefix, kind string }{
		{"MOVED ", "moved"}, {"ASK ", "ask"}, {"TRYAGAIN", "tryagain"}, {"CLUSTERDOWN", "clusterdown"},
		{"READONLY", "readonly"}, {"LOADING", "loading"}, {"MASTERDOWN", "masterdown"},
	} {
		if strings.HasPrefix(msg, p.prefix) {
			return p.kind
		}
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if errors.As(err, &nerr) || errors.Is(err, net.ErrClosed) || msg == "EOF" {
		return "conn"
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return "other"
	}
	return "conn"
}

// nodeHook is installed on the client of one server (each cluster node gets
// its own): it labels errors and dials with that server's address and, on
// connection-level failures of a cluster node, asks the cluster client to
// reload its slot map so a promoted replica is found without waiting for
// the periodic refresh.
type nodeHook struct {
	m      *RedisMetrics
	addr   string
	reload func()
}

func (h nodeHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		result := "ok"
		if err != nil {
			result = "error"
			if h.reload != nil {
				h.reload()
			}
		}
		if h.m != nil {
			h.m.dials.WithLabelValues(addr, result).Inc()
			if err == nil && h.addr == "" {
				h.m.sawMaster(addr)
			}
		}
		return c, err
	}
}

func (h nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.m.countCommand(cmd)
		err := next(ctx, cmd)
		if !expectedError(cmd, err) {
			h.record(err)
		}
		return err
	}
}

func (h nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.m.countCommand(c)
		}
		err := next(ctx, cmds)
		if err != nil {
			for _, c := range cmds {
				if c.Err() != nil && !expectedError(c, c.Err()) {
					h.record(c.Err())
					break
				}
			}
		}
		return err
	}
}

// expectedError reports whether err is a reply its caller expects, not a
// sign of an unwell Redis, so nexo_redis_command_errors_total leaves it
// out: BUSYGROUP (creating a consumer group that exists, the consumers'
// idempotent set-up) and the refusal of the optional CLIENT subcommands
// go-redis sends best effort when it opens a connection (SETINFO, Redis
// 7.2+; MAINT_NOTIFICATIONS, newer still), which older servers and the
// embedded one answer with an error on every dial. Only the server's
// replies qualify: a connection failure of the same commands counts.
func expectedError(cmd redis.Cmder, err error) bool {
	var reply redis.Error
	if err == nil || !errors.As(err, &reply) {
		return false
	}
	if strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return true
	}
	args := cmd.Args()
	if cmd.Name() != "client" || len(args) < 2 {
		return false
	}
	sub, _ := args[1].(string)
	return strings.EqualFold(sub, "setinfo") || strings.EqualFold(sub, "maint_notifications")
}

func (h nodeHook) record(err error) {
	kind := errorKind(err)
	if kind == "" {
		return
	}
	if (kind == "conn" || kind == "timeout" || kind == "clusterdown") && h.reload != nil {
		h.reload()
	}
	if h.m == nil {
		return
	}
	addr := h.addr
	if addr == "" {
		addr = "master"
	}
	h.m.errors.WithLabelValues(addr, kind).Inc()
	if kind == "moved" || kind == "ask" {
		h.m.redirects.WithLabelValues(kind).Inc()
	}
}

// countCommand counts cmd under its name. The counters are kept per name
// so the hot path is a read-locked map look-up and an atomic add.
func (m *RedisMetrics) countCommand(cmd redis.Cmder) {
	if m == nil {
		return
	}
	name := cmd.Name()
	m.cmdMu.RLock()
	c, ok := m.cmdByNm[name]
	m.cmdMu.RUnlock()
	if !ok {
		c = m.commands.WithLabelValues(name)
		m.cmdMu.Lock()
		m.cmdByNm[name] = c
		m.cmdMu.Unlock()
	}
	c.Inc()
}

// sawMaster counts a master change when the sentinel-discovered master
// address differs from the last one dialled.
func (m *RedisMetrics) sawMaster(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.master != "" && m.master != addr {
		m.failovers.Inc()
	}
	m.master = addr
}

// throttle returns a function that runs f at most once per interval.
func throttle(interval time.Duration, f func()) func() {
	var mu sync.Mutex
	var last time.Time
	return func() {
		mu.Lock()
		if time.Since(last) < interval {
			mu.Unlock()
			return
		}
		last = time.Now()
		mu.Unlock()
		f()
	}
}
