package streams

import (
	"testing"
	"time"
)

// The records are whole since the watch began until a shard is answered
// by another server than before; a first server, the same one again or
// no run_id (the fence off) move nothing.
func TestRecordsWatchMovesOnAChangedServer(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	w := newRecordsWatch(start)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	for i, s := range []struct {
		shard int
		node  string
	}{{0, "run-a"}, {1, "run-b"}, {0, "run-a"}, {0, ""}} {
		if prev := w.saw(s.shard, s.node, at(i+1)); prev != "" {
			t.Fatalf("saw(%d, %q) reported a change from %q", s.shard, s.node, prev)
		}
	}
	if got := time.UnixMilli(w.since.Load()); !got.Equal(start) {
		t.Fatalf("since %v after no change, want %v", got, start)
	}
	if prev := w.saw(0, "run-c", at(5)); prev != "run-a" {
		t.Fatalf("saw(0, run-c) reported a change from %q, want run-a", prev)
	}
	if w.server(0) != "run-c" || w.server(1) != "run-b" || w.server(2) != "" {
		t.Fatalf("servers %q %q %q, want run-c run-b and none", w.server(0), w.server(1), w.server(2))
	}
	if got := time.UnixMilli(w.since.Load()); !got.Equal(at(5)) {
		t.Fatalf("since %v after shard 0 changed server, want %v", got, at(5))
	}
	w.saw(1, "run-b", at(6))
	if got := time.UnixMilli(w.since.Load()); !got.Equal(at(5)) {
		t.Fatalf("since %v after shard 1's server answered again, want %v", got, at(5))
	}
}

// learn moves since back to the servers' start unless a probed server is
// not the one an accept saw, which is a change.
func TestRecordsWatchLearnsTheServersStart(t *testing.T) {
	created := time.UnixMilli(10_000_000)
	w := newRecordsWatch(created)
	w.saw(0, "run-a", created.Add(time.Second))
	w.learn(map[int]string{0: "run-a", 1: "run-b"}, created.Add(-time.Hour), created.Add(2*time.Second))
	if got := time.UnixMilli(w.since.Load()); !got.Equal(created.Add(-time.Hour)) {
		t.Fatalf("since %v after learning, want the servers' start %v", got, created.Add(-time.Hour))
	}
	w.saw(1, "run-b", created.Add(3*time.Second))
	if got := time.UnixMilli(w.since.Load()); !got.Equal(created.Add(-time.Hour)) {
		t.Fatalf("since %v after the learnt server answered, want it unchanged", got)
	}

	w = newRecordsWatch(created)
	w.saw(0, "run-a", created.Add(time.Second))
	w.learn(map[int]string{0: "run-c"}, created.Add(-time.Hour), created.Add(2*time.Second))
	if got := time.UnixMilli(w.since.Load()); !got.Equal(created.Add(2 * time.Second)) {
		t.Fatalf("since %v after probing another server than an accept saw, want the probe's time", got)
	}
}
