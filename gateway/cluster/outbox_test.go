package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/gateway/ws"
)

// TestPushesEnvelopeRoundTrip: a pushes envelope carries each item's users,
// except, message tag and frame bytes unchanged, in order; a truncated one
// is refused, not half applied.
func TestPushesEnvelopeRoundTrip(t *testing.T) {
	items := []pushItem{
		{users: []string{"u1", "u2"}, except: "c9", msg: &ws.MsgRef{ServerMsgID: "s1", ConversationID: "si_u1_u2", Seq: 42}, frame: []byte(`{"req_identifier":2001}`)},
		{users: []string{"u3"}, frame: []byte("not json, any bytes \x00\xff")},
		{users: []string{"u4"}, msg: &ws.MsgRef{ServerMsgID: "s2", ConversationID: "sg_g", Seq: -1}, frame: nil},
	}
	b := encodePushes(items)
	got, err := decodePushes(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("%d items back, want %d", len(got), len(items))
	}
	for i := range items {
		w, g := items[i], got[i]
		if !slices.Equal(w.users, g.users) || w.except != g.except || string(w.frame) != string(g.frame) ||
			(w.msg == nil) != (g.msg == nil) || w.msg != nil && *w.msg != *g.msg {
			t.Fatalf("item %d: got %+v, want %+v", i, g, w)
		}
	}
	for cut := 1; cut < len(b); cut += 7 {
		if _, err := decodePushes(b[:cut]); err != nil && !errors.Is(err, errBadPushes) {
			t.Fatalf("cut at %d: %v", cut, err)
		} else if err == nil {
			// A cut exactly between items decodes the items before it.
			continue
		}
	}
	if _, err := decodePushes([]byte{0xff}); !errors.Is(err, errBadPushes) {
		t.Fatalf("garbage: %v, want errBadPushes", err)
	}
}

// TestWatermillClosingErrorsAreDebug: watermill's error lines that only say
// the bus is closing (context.Canceled) are debug, other errors stay
// errors (redisstream logs "read fail" at error level on every Close).
func TestWatermillClosingErrorsAreDebug(t *testing.T) {
	var buf strings.Builder
	log := wmLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	log.Error("read fail", fmt.Errorf("xreadgroup: %w", context.Canceled), nil)
	if buf.Len() != 0 {
		t.Fatalf("a closing error was logged above debug: %s", buf.String())
	}
	log.Error("read fail", errors.New("connection refused"), nil)
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a real error was not logged as one: %q", buf.String())
	}
}

// TestInboxNoConnectionCountsOnlyMisses: a push from the inbox counts a
// recipient with no connection here, not a sender whose only connection
// here is the one the push excepts (its own sending connection).
func TestInboxNoConnectionCountsOnlyMisses(t *testing.T) {
	local := newFakeLocal("alice", "bob")
	local.conn = map[string]string{"alice": "conn-a"}
	r, err := New(Deps{Local: local, Presence: fakePresence{}, Membership: &fakeMembership{}, Bus: &Bus{}})
	if err != nil {
		t.Fatal(err)
	}
	r.pushLocal(context.Background(), pushItem{users: []string{"alice", "bob", "gone"}, except: "conn-a", frame: []byte(`{}`)})
	if got := testutil.ToFloat64(r.m.noConn); got != 1 {
		t.Fatalf("inbox_no_connection = %v, want 1 (only the user with no connection here)", got)
	}
	r.pushLocal(context.Background(), pushItem{users: []string{"alice"}, frame: []byte(`{}`)})
	if got := testutil.ToFloat64(r.m.noConn); got != 1 || len(local.got["alice"]) != 1 {
		t.Fatalf("inbox_no_connection = %v, alice got %d frames", got, len(local.got["alice"]))
	}
}
