package chat

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/streams"
)

// uuidV7At is a UUIDv7 made at t.
func uuidV7At(t *testing.T, at time.Time) string {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(at.UnixMilli())<<16)
	copy(u[:6], ts[:6])
	return u.String()
}

func TestRecentClientMsgID(t *testing.T) {
	now := time.UnixMilli(1_795_000_000_000)
	since, ttl := now.Add(-2*time.Hour), 24*time.Hour
	v4 := uuid.New().String()
	for _, tc := range []struct {
		name  string
		id    string
		since time.Time
		ttl   time.Duration
		want  bool
	}{
		{"made now", uuidV7At(t, now), since, ttl, true},
		{"upper case", strings.ToUpper(uuidV7At(t, now)), since, ttl, true},
		{"made within the clock skew ahead", uuidV7At(t, now.Add(30*time.Second)), since, ttl, true},
		{"made further ahead", uuidV7At(t, now.Add(2*time.Minute)), since, ttl, false},
		{"made after the records were last whole", uuidV7At(t, since.Add(90*time.Second)), since, ttl, true},
		{"made within the skew of the records' loss", uuidV7At(t, since.Add(30*time.Second)), since, ttl, false},
		{"made before the records' loss", uuidV7At(t, since.Add(-time.Hour)), since, ttl, false},
		{"old, the records whole for longer", uuidV7At(t, now.Add(-23*time.Hour-57*time.Minute)), now.Add(-48 * time.Hour), ttl, true},
		{"as old as the ttl less twice the skew", uuidV7At(t, now.Add(-ttl+2*time.Minute)), now.Add(-48 * time.Hour), ttl, false},
		{"records kept a minute only", uuidV7At(t, now), since, time.Minute, false},
		{"UUIDv4", v4, since, ttl, false},
		{"UUIDv7 without dashes", strings.ReplaceAll(uuidV7At(t, now), "-", ""), since, ttl, false},
		{"SDK before UUIDv7", "c-m1abc-0123456789abcdef0123", since, ttl, false},
		{"empty", "", since, ttl, false},
		{"36 characters, not a UUID", strings.Repeat("x", 36), since, ttl, false},
	} {
		if got := recentClientMsgID(tc.id, now, tc.since, tc.ttl); got != tc.want {
			t.Errorf("%s (%q): %v, want %v", tc.name, tc.id, got, tc.want)
		}
	}
}

// keptRecords says the records are whole since since, kept for ttl.
type keptRecords struct {
	since time.Time
	ttl   time.Duration
}

func (k keptRecords) RecordsKept() (time.Time, time.Duration) { return k.since, k.ttl }

// downAccepter answers every accept with Redis unreachable.
type downAccepter struct{ freshAccepter }

func (downAccepter) Accept(context.Context, streams.AcceptRequest) (streams.Accepted, error) {
	return streams.Accepted{}, fmt.Errorf("accept: %w", streams.ErrRedisUnavailable)
}

// TestRecentUUIDv7SendSkipsTheDuplicateLookup: a send whose client_msg_id
// is a recent UUIDv7 is accepted without asking the database (counted in
// nexo_send_duplicate_checks_skipped_total), even when the database holds
// the ID — the accept step's record answers a retry; any other ID is
// looked up and a saved one answered as the original. After a send this
// process saved without Redis (no record written), IDs made before it are
// looked up again.
func TestRecentUUIDv7SendSkipsTheDuplicateLookup(t *testing.T) {
	now := time.Now()
	recent, plain := uuidV7At(t, now.Add(-time.Second)), "c-plain-1"
	orig := &fakeOriginals{saved: map[domain.ClientMsgKey]domain.Message{}}
	for _, id := range []string{recent, plain} {
		orig.saved[domain.ClientMsgKey{SenderID: "alice", ClientMsgID: id}] = domain.Message{ServerMsgID: "original-" + id, Seq: 3, SenderID: "alice"}
	}
	mode := configs.TwoPhase{Enabled: true, FailOpen: true, IdempotencyTTL: 24 * time.Hour}
	deps := Deps{Mode: NewMode(mode), Msg: configs.Default().Msg, Accepter: freshAccepter{}, Saver: savedBefore{},
		Leaser: &leaseLog{}, Users: everyone{}, Fanout: noFanout{}, Originals: orig,
		Records: keptRecords{since: now.Add(-time.Hour), ttl: 24 * time.Hour}, Log: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()}
	s := NewService(deps)
	if ack := sendHi(t, s, recent); ack.AckType != string(domain.AckAccepted) || ack.Seq != 7 || orig.calls != 0 {
		t.Fatalf("recent UUIDv7: ack %+v after %d lookups; want accepted at seq 7 without a lookup", ack, orig.calls)
	}
	if n := testutil.ToFloat64(s.metrics.lookupsSkipped); n != 1 {
		t.Fatalf("skipped lookups %v, want 1", n)
	}
	if ack := sendHi(t, s, plain); ack.ServerMsgID != "original-"+plain || orig.calls != 1 {
		t.Fatalf("plain ID: ack %+v after %d lookups; want the original after one", ack, orig.calls)
	}

	deps.Accepter, deps.Registry = downAccepter{}, prometheus.NewRegistry()
	s = NewService(deps)
	sendHi(t, s, "c-fallback-1") // saved without Redis
	calls := orig.calls
	if ack := sendHi(t, s, recent); ack.ServerMsgID != "original-"+recent || orig.calls != calls+1 {
		t.Fatalf("after a fallback: ack %+v after %d lookups; want the original, looked up", ack, orig.calls-calls)
	}
}
