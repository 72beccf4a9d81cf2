package main

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// clock is the run's time base: monotonic nanoseconds since base, so that
// wall-clock steps cannot bend a latency.
type clock struct{ base time.Time }

func newClock() *clock { return &clock{base: time.Now()} }

// now is the monotonic time since base, in nanoseconds.
func (c *clock) now() int64 { return int64(time.Since(c.base)) }

// at converts an offset back to a wall-clock time (for sleeping until a
// scheduled send).
func (c *clock) at(offset int64) time.Time { return c.base.Add(time.Duration(offset)) }

// Histogram range: 1 µs to 10 min. Three significant digits keep every
// percentile within 0.1% of the recorded value.
const (
	histLowestUs  = 1
	histHighestUs = int64(10 * time.Minute / time.Microsecond)
)

// latencyHist is an HDR histogram of latencies in microseconds with the
// exact maximum kept beside it (HDR reports the top of the max's bucket).
type latencyHist struct {
	h     *hdrhistogram.Histogram
	maxNs int64
	sumNs float64
}

func newLatencyHist() *latencyHist {
	return &latencyHist{h: hdrhistogram.New(histLowestUs, histHighestUs, 3)}
}

// record adds one latency in nanoseconds; negatives (an event that beat
// its reference, e.g. a saved push before the accepted answer) count as 0.
func (l *latencyHist) record(ns int64) {
	ns = max(ns, 0)
	us := min(max(ns/1000, histLowestUs), histHighestUs)
	_ = l.h.RecordValue(us) // cannot fail: us is clamped to the range
	l.maxNs = max(l.maxNs, ns)
	l.sumNs += float64(ns)
}

// Percentiles summarises a latency histogram in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

func (l *latencyHist) summary() Percentiles {
	n := l.h.TotalCount()
	if n == 0 {
		return Percentiles{}
	}
	top := round3(float64(l.maxNs) / 1e6)
	// HDR reports the top of a value's bucket; never above the exact max.
	ms := func(us int64) float64 { return min(round3(float64(us)/1000), top) }
	return Percentiles{
		Count: n,
		Mean:  round3(l.sumNs / float64(n) / 1e6),
		P50:   ms(l.h.ValueAtQuantile(50)),
		P90:   ms(l.h.ValueAtQuantile(90)),
		P99:   ms(l.h.ValueAtQuantile(99)),
		P999:  ms(l.h.ValueAtQuantile(99.9)),
		Max:   top,
	}
}

// curve returns (percentile, ms) points for the HTML latency chart.
func (l *latencyHist) curve() [][2]float64 {
	var out [][2]float64
	for _, q := range curveQuantiles {
		if l.h.TotalCount() == 0 {
			break
		}
		out = append(out, [2]float64{q, round3(float64(l.h.ValueAtQuantile(q)) / 1000)})
	}
	return out
}

var curveQuantiles = []float64{10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100}

func round3(v float64) float64 {
	if v >= 0 {
		return float64(int64(v*1000+0.5)) / 1000
	}
	return -float64(int64(-v*1000+0.5)) / 1000
}

// tick is one second of the timeline: events counted by when they
// happened, and coarse (two significant digits) latency histograms of the
// events of that second.
type tick struct {
	eventCounts   // sent, accepted, saved and delivered (recorder.count)
	errors        int64
	acc, lag, del *hdrhistogram.Histogram
}

// timeline buckets events per second since the run started: origin is the
// clock reading when sending starts (the session clock also counts the
// setup, which the charts' seconds must not).
type timeline struct {
	origin int64
	ticks  []*tick
}

func (t *timeline) at(ns int64) *tick {
	i := int(max(ns-t.origin, 0) / int64(time.Second))
	for len(t.ticks) <= i {
		t.ticks = append(t.ticks, &tick{
			acc: hdrhistogram.New(histLowestUs, histHighestUs, 2),
			lag: hdrhistogram.New(histLowestUs, histHighestUs, 2),
			del: hdrhistogram.New(histLowestUs, histHighestUs, 2),
		})
	}
	return t.ticks[i]
}

func recordCoarse(h *hdrhistogram.Histogram, ns int64) {
	_ = h.RecordValue(min(max(ns/1000, histLowestUs), histHighestUs))
}

// TimelinePoint is one second of a run in the JSON result.
type TimelinePoint struct {
	Second      int     `json:"t_s"`
	Sent        int64   `json:"sent"`
	Accepted    int64   `json:"accepted"`
	Saved       int64   `json:"saved"`
	Delivered   int64   `json:"delivered"`
	Errors      int64   `json:"errors"`
	AcceptedP99 float64 `json:"accepted_p99_ms"`
	LagP99      float64 `json:"lag_p99_ms"`
	DeliveryP99 float64 `json:"delivery_p99_ms"`
}

func (t *timeline) points() []TimelinePoint {
	p99 := func(h *hdrhistogram.Histogram) float64 {
		if h.TotalCount() == 0 {
			return 0
		}
		return round3(float64(h.ValueAtQuantile(99)) / 1000)
	}
	out := make([]TimelinePoint, len(t.ticks))
	for i, k := range t.ticks {
		out[i] = TimelinePoint{Second: i, Sent: k.sent, Accepted: k.accepted, Saved: k.saved, Delivered: k.delivered,
			Errors: k.errors, AcceptedP99: p99(k.acc), LagP99: p99(k.lag), DeliveryP99: p99(k.del)}
	}
	return out
}
