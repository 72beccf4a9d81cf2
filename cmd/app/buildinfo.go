package app

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterBuildInfo exports nexo_build_info{version,commit,go_version} = 1,
// so dashboards can show which build each instance runs. cmd/nexo calls it
// with the version and commit baked in at build time (ldflags).
func (a *App) RegisterBuildInfo(version, commit string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "nexo", Name: "build_info",
		Help:        "Always 1; the labels name the running build.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "go_version": runtime.Version()},
	})
	g.Set(1)
	a.metrics.MustRegister(g)
}
