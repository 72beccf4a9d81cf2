package ws

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus series (namespace nexo, subsystem ws).
type metrics struct {
	conns       prometheus.Gauge
	framesIn    prometheus.Counter
	framesOut   prometheus.Counter
	slowCloses  prometheus.Counter
	kicks       prometheus.Counter
	disconnects *prometheus.CounterVec
	rejects     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "nexo", Subsystem: "ws", Name: name, Help: help}
	}
	m := &metrics{
		conns:      prometheus.NewGauge(prometheus.GaugeOpts(opts("connections", "Open WebSocket connections."))),
		framesIn:   prometheus.NewCounter(prometheus.CounterOpts(opts("frames_in_total", "Data frames received."))),
		framesOut:  prometheus.NewCounter(prometheus.CounterOpts(opts("frames_out_total", "Data frames written (responses and pushes)."))),
		slowCloses: prometheus.NewCounter(prometheus.CounterOpts(opts("slow_consumer_closes_total", "Connections closed because their send queue was full or above high water too long."))),
		kicks:      prometheus.NewCounter(prometheus.CounterOpts(opts("kicks_total", "Connections kicked by the login policy."))),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts(opts("disconnects_total", "Closed connections by cause.")),
			[]string{"cause"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts(opts("handshake_rejects_total", "Refused upgrades by reason.")),
			[]string{"reason"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.conns, m.framesIn, m.framesOut, m.slowCloses, m.kicks, m.disconnects, m.rejects} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("ws metrics already registered (one ws.Server per registerer): %w", err)
			}
			return nil, fmt.Errorf("register ws metrics: %w", err)
		}
	}
	return m, nil
}
