package chat

import (
	"context"
	"hash/maphash"

	"github.com/nexo-im/nexo/domain"
)

// rangeKey is one pull's read: a conversation's rows in [begin, end], at
// most limit of them.
type rangeKey struct {
	conversationID string
	begin, end     int64
	limit          int
}

// rangeResult is a read's rows; callers of one key share the slice and
// must not modify it.
type rangeResult struct {
	msgs []domain.Message
}

// rangeStripes is how many independent group commits rangeLookup spreads
// conversations over, so pulls of different conversations do not wait for
// each other's queries.
const rangeStripes = 64

// rangeLookup is Reader.Range for pulls, group committed like maxSeqLookup
// but per conversation (striped): the pulls a group's 2102 sets off all ask
// for the same newest rows, so the pulls of one batch that ask the same
// window share one query. Each batch starts after its callers arrived, so
// it sees every row saved before the pull read its in-flight marks (see
// Puller.Pull).
type rangeLookup struct {
	reader  Reader
	seed    maphash.Seed
	stripes [rangeStripes]*domain.GroupCommit[rangeKey, rangeResult]
}

func newRangeLookup(r Reader) *rangeLookup {
	l := &rangeLookup{reader: r, seed: maphash.MakeSeed()}
	for i := range l.stripes {
		l.stripes[i] = domain.NewGroupCommit(maxBoundsBatch, l.flush)
	}
	return l
}

// flush runs one query per distinct window of the batch, in arrival order.
func (l *rangeLookup) flush(ctx context.Context, batch []*domain.Call[rangeKey, rangeResult]) {
	ctx, cancel := context.WithTimeout(ctx, pullReadTimeout)
	defer cancel()
	done := make(map[rangeKey]*domain.Call[rangeKey, rangeResult], 1)
	for _, c := range batch {
		if first, ok := done[c.Req]; ok {
			c.Res, c.Err = first.Res, first.Err
			continue
		}
		k := c.Req
		msgs, err := l.reader.Range(ctx, k.conversationID, k.begin, k.end, k.limit)
		c.Res, c.Err = rangeResult{msgs: msgs}, err
		done[k] = c
	}
}

// Range returns the stored messages of conversationID in [begin, end],
// ascending, at most limit; the slice may be shared with other pulls and
// must not be modified.
func (l *rangeLookup) Range(ctx context.Context, conversationID string, begin, end int64, limit int) ([]domain.Message, error) {
	gc := l.stripes[maphash.String(l.seed, conversationID)%rangeStripes]
	res, err := gc.Do(ctx, rangeKey{conversationID: conversationID, begin: begin, end: end, limit: limit})
	return res.msgs, err
}
