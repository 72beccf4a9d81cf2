package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHTMLReportIsSelfContained: the report inlines the vendored ECharts
// and loads no script from the network (issue 15 item 17).
func TestHTMLReportIsSelfContained(t *testing.T) {
	r := &Result{Name: "single", Params: Params{WarmupS: 2, DurationS: 10},
		Curves:   map[string][][2]float64{"accepted": {{50, 1.5}, {99, 4}}},
		Timeline: []TimelinePoint{{Second: 0, Sent: 10}, {Second: 1, Sent: 12}}}
	var b strings.Builder
	if err := writeHTML(&b, "report", "table text", resultCharts(r)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if m := regexp.MustCompile(`<script[^>]+src=["']?https?://[^>]*>`).FindString(page); m != "" {
		t.Fatalf("report loads a script from the network: %s", m)
	}
	if len(echartsJS) < 500_000 || !strings.Contains(page, echartsJS) {
		t.Fatalf("report does not inline the embedded ECharts (%d bytes embedded)", len(echartsJS))
	}
	if i, j := strings.Index(page, echartsJS), strings.Index(page, "echarts.init"); j < 0 || i > j {
		t.Fatalf("the embedded script must come before the charts' init (script at %d, init at %d)", i, j)
	}
	if !strings.Contains(page, "table text") {
		t.Fatal("the text table is missing")
	}
}

// TestTimelineCountsFromSendingStart: the timeline's seconds start when
// sending starts, not when the session (and its setup) started, so the
// captions' warm-up and stop seconds line up with the data.
func TestTimelineCountsFromSendingStart(t *testing.T) {
	setup := int64(7 * time.Second)
	tl := timeline{origin: setup}
	tl.at(setup+int64(1500*time.Millisecond)).sent++
	if p := tl.points(); len(p) != 2 || p[1].Sent != 1 {
		t.Fatalf("event 1.5 s after sending started must fall in second 1, got %+v", p)
	}
}
