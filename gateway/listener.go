package gateway

import (
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// capListener is the slowloris and connection-flood guard in front of
// Hertz (docs/security.md). On accept it
//   - refuses (closes at once) a connection over http.max_conns in total or
//     over http.max_conns_per_ip from one peer address (peers in
//     http.trusted_proxies are exempt from the per-IP cap: every client
//     behind them shares their address);
//   - sets a read deadline of http.read_header_timeout, so a connection
//     must deliver its first request within it. Hertz's standard transport
//     sets no deadline for the first request of a connection (later ones
//     get http.read_timeout and http.idle_timeout from Hertz itself), so
//     without this a silent or dripping connection stays open forever. A
//     WebSocket upgrade clears the deadline when Hertz hijacks the
//     connection; the session then keeps its own (ws.pong_wait).
//
// Counts are released when the connection is closed, whoever closes it.
type capListener struct {
	net.Listener
	maxTotal, maxPerIP int // 0: no cap
	headerTimeout      time.Duration
	exempt             func(ip net.IP) bool
	m                  *connMetrics

	mu    sync.Mutex
	total int
	perIP map[string]int
}

type connMetrics struct {
	open    prometheus.Gauge
	refused *prometheus.CounterVec
}

func newConnMetrics(reg prometheus.Registerer) *connMetrics {
	m := &connMetrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "nexo", Name: "http_connections_open",
			Help: "TCP connections open on http.addr (HTTP keep-alive and WebSocket).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "http_connections_refused_total",
			Help: "Connections closed at accept, by cap: total (http.max_conns) or per_ip (http.max_conns_per_ip).",
		}, []string{"cap"}),
	}
	if reg != nil {
		reg.MustRegister(m.open, m.refused)
	}
	return m
}

// Accept returns the next connection within the caps; refused ones are
// closed and counted here, never returned as errors (Hertz stops serving
// on an Accept error).
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := peerHost(c.RemoteAddr())
		if reason := l.admit(ip); reason != "" {
			l.m.refused.WithLabelValues(reason).Inc()
			_ = c.Close()
			continue
		}
		l.m.open.Inc()
		if l.headerTimeout > 0 {
			_ = c.SetReadDeadline(time.Now().Add(l.headerTimeout))
		}
		return &cappedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *capListener) admit(ip string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxTotal > 0 && l.total >= l.maxTotal {
		return "total"
	}
	capped := l.maxPerIP > 0 && !(l.exempt != nil && l.exempt(net.ParseIP(ip)))
	if capped && l.perIP[ip] >= l.maxPerIP {
		return "per_ip"
	}
	l.total++
	l.perIP[ip]++
	return ""
}

func (l *capListener) release(ip string) {
	l.m.open.Dec()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

// cappedConn releases its listener's counts once, on the first Close.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
