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
	w.saw(0, "run-a", at(1))
	w.saw(1, "run-b", at(2))
	w.saw(0, "run-a", at(3))
	w.saw(0, "", at(4))
	if got := time.UnixMilli(w.since.Load()); !got.Equal(start) {
		t.Fatalf("since %v after no change, want %v", got, start)
	}
	w.saw(0, "run-c", at(5))
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
