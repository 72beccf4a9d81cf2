package chat

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nexo-im/nexo/domain"
)

type fakeRows struct{ seqs []int64 }

func (f fakeRows) Range(_ context.Context, conv string, begin, end int64, limit int) ([]domain.Message, error) {
	var out []domain.Message
	for _, s := range f.seqs {
		if s >= begin && s <= end && len(out) < limit {
			out = append(out, domain.Message{ConversationID: conv, Seq: s, ServerMsgID: fmt.Sprint(s), Status: domain.StatusNormal})
		}
	}
	return out, nil
}

func (f fakeRows) BySeqs(ctx context.Context, conv string, seqs []int64) ([]domain.Message, error) {
	return f.Range(ctx, conv, 1, 1<<40, 1000)
}

type fakeMax int64

func (f fakeMax) MaxSeq(context.Context, string) (int64, error) { return int64(f), nil }

type fakeInFlight struct {
	seqs []int64
	err  error
}

func (f fakeInFlight) InFlight(context.Context, string) ([]int64, error) { return f.seqs, f.err }

func render(res PullResult) string {
	out := ""
	for _, m := range res.Messages {
		out += fmt.Sprintf("%d:%s ", m.Seq, m.Status)
	}
	return out + fmt.Sprint(res.PendingSeqs)
}

// TestPullStopsAtInFlightSeqs covers the page rules without a backend:
// known in-flight seqs stop a page, gaps are placeholders, and when the
// in-flight state cannot be read every missing seq counts as "not yet".
func TestPullStopsAtInFlightSeqs(t *testing.T) {
	rows := fakeRows{seqs: []int64{1, 2, 4, 6, 7}} // 3 in flight, 5 a gap
	conv := domain.SingleConversationID("a", "b")
	cases := []struct {
		name     string
		inflight InFlight
		req      PullRequest
		want     string
	}{
		{"no tracking: gaps only", nil, PullRequest{BeginSeq: 1}, "1:normal 2:normal 3:unavailable 4:normal 5:unavailable 6:normal 7:normal []"},
		{"stops before 3", fakeInFlight{seqs: []int64{3}}, PullRequest{BeginSeq: 1}, "1:normal 2:normal [3]"},
		{"above it", fakeInFlight{seqs: []int64{3}}, PullRequest{BeginSeq: 4}, "4:normal 5:unavailable 6:normal 7:normal []"},
		{"newest walks down to it", fakeInFlight{seqs: []int64{3}}, PullRequest{}, "4:normal 5:unavailable 6:normal 7:normal [3]"},
		{"unknown: stops at the first missing", fakeInFlight{err: errors.New("down")}, PullRequest{BeginSeq: 1}, "1:normal 2:normal [3]"},
		{"unknown, newest", fakeInFlight{err: errors.New("down")}, PullRequest{}, "6:normal 7:normal [5]"},
	}
	for _, c := range cases {
		p := NewPuller(rows, fakeMax(7), nil, c.inflight)
		c.req.ConversationID = conv
		res, err := p.Pull(context.Background(), "a", c.req)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(res); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	p := NewPuller(rows, fakeMax(7), nil, fakeInFlight{err: errors.New("down")})
	res, _ := p.PullBySeqs(context.Background(), "a", conv, []int64{2, 3, 5})
	if got := render(res); got != "2:normal [3 5]" {
		t.Errorf("by seqs, unknown: %s", got)
	}
}
