package chat

import (
	"context"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// BatchMaxSeqs reads the highest saved seq of many conversations in one
// query (store.SeqRepo); a conversation absent from the map has none.
type BatchMaxSeqs interface {
	MaxSeqs(ctx context.Context, conversationIDs []string) (map[string]int64, error)
}

// maxBoundsBatch bounds one batched max_seq read's IN list.
const maxBoundsBatch = 256

// pullReadTimeout bounds one batched read of pulls (max_seq or rows): the
// batch runs without its callers' cancellation, so a database that hangs
// fails the pulls after this long instead of holding them. Longer than the
// send's duplicate lookup (lookupTimeout): a failed pull is an error the
// client sees, a failed lookup is not.
const pullReadTimeout = 10 * time.Second

// maxSeqLookup is MaxSeqs for pulls, group committed: a pull that finds no
// read in flight reads at once, alone; pulls that arrive while one is in
// flight go together, as one query, when it returns. A group in notify
// mode makes every online member pull at once after each message (500
// pulls of one conversation), and each used to read the same row.
// Freshness is kept: a batch starts after each of its callers arrived, so
// it sees every save committed before the pull was asked.
type maxSeqLookup struct {
	batch BatchMaxSeqs
	gc    *domain.GroupCommit[string, int64]
}

func newMaxSeqLookup(b BatchMaxSeqs) *maxSeqLookup {
	l := &maxSeqLookup{batch: b}
	l.gc = domain.NewGroupCommit(maxBoundsBatch, l.flush)
	return l
}

// flush reads the batch's conversations, each once, in one query.
func (l *maxSeqLookup) flush(ctx context.Context, batch []*domain.Call[string, int64]) {
	ids := make([]string, 0, len(batch))
	seen := make(map[string]bool, len(batch))
	for _, c := range batch {
		if !seen[c.Req] {
			seen[c.Req] = true
			ids = append(ids, c.Req)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, pullReadTimeout)
	defer cancel()
	found, err := l.batch.MaxSeqs(ctx, ids)
	for _, c := range batch {
		c.Res, c.Err = found[c.Req], err
	}
}

// MaxSeq returns conversationID's highest saved seq (0: none) or the
// database's error.
func (l *maxSeqLookup) MaxSeq(ctx context.Context, conversationID string) (int64, error) {
	return l.gc.Do(ctx, conversationID)
}
