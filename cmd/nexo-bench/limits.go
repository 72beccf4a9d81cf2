package main

import (
	"context"
	"fmt"
)

// The limits-5k step (the hardening budget: hardening may cost the hot path at
// most 3 % of throughput at 5,000 msg/s): the suite's server, whose bench
// settings turn the per-user send limit off (NEXO_WS_RATE_LIMIT=0), vs a
// second server with the shipped default (ws.rate_limit 100/s, burst 200:
// one GCRA check in Redis per send, shared by all instances). Content
// validation and the other per-message checks run on both sides; their
// cost is measured by BenchmarkCheckStorableJSON (gateway/chat).
func (s *suite) limits(ctx context.Context, name string) (SuiteEntry, error) {
	jsonPath, htmlPath, e := s.files(name)
	e.Kind = "compare"
	so := s.so
	so.FreshDB = false // the suite's server uses the database already
	so.Env = []string{"NEXO_WS_RATE_LIMIT=100", "NEXO_WS_RATE_BURST=200"}
	limited, err := startInProcess(ctx, so, s.log)
	if err != nil {
		return e, fmt.Errorf("start the server with the default send limit: %w", err)
	}
	defer limited.Close()
	c, err := s.compareAt5k(ctx, name, limited, "", nil)
	if err != nil {
		return e, err
	}
	c.A.Mode, c.B.Mode = "per-user send limit off", "per-user send limit 100/s, burst 200 (the default)"
	writeCompare(s.stdout, c)
	e.OK = c.A.Median["failures"]+c.B.Median["failures"] == 0
	return e, writeOutputs(jsonPath, htmlPath, c, name, compareText(c), compareChart(c))
}
