package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// probeTimeout bounds one probe; the container healthcheck's own timeout is
// a little longer.
const probeTimeout = 2 * time.Second

func probeFlags(fs *flag.FlagSet) {
	fs.String("url", "http://127.0.0.1:8080/readyz", "URL that must answer 200")
}

// probeCmd is the healthcheck of the distroless image (no shell, no curl):
// GET the URL and succeed on 200 only. /readyz answers 503 while a
// dependency is down and from SIGTERM on, so a draining container reports
// unhealthy.
func probeCmd(ctx context.Context, inv invocation) error {
	url := inv.flags.Lookup("url").Value.String()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
