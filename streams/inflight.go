package streams

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// InFlightReader answers which seqs of a conversation are accepted but not
// yet settled — "not yet", as opposed to a gap that is "never".
//
// Why this is exact: the accept script writes a seq's mark in the same
// atomic step as its stream entry, and the save stage removes it in the
// same atomic step as its XACK, after the database commit. So a seq that
// was issued and is not marked is either in the database or never will be;
// and when Redis loses its data the marks go together with the entries
// they stand for, so a seq leased or issued before the loss is correctly
// "never". A reader must read the marks before the rows (a seq settled in
// between is then found among the rows), and only ask about seqs issued
// before it read the marks (at or below the saved max_seq it read first).
type InFlightReader struct {
	rdb  redis.UniversalClient
	keys Keys
	now  func() time.Time
}

// NewInFlightReader returns the reader over the pipeline's keys.
func NewInFlightReader(rdb redis.UniversalClient, keys Keys) *InFlightReader {
	return &InFlightReader{rdb: rdb, keys: keys, now: time.Now}
}

// InFlight returns conversationID's in-flight seqs, ascending. Errors are
// Redis's (wrapped in ErrRedisUnavailable when it does not answer); a
// caller that cannot read the marks must treat every missing seq as "not
// yet".
func (r *InFlightReader) InFlight(ctx context.Context, conversationID string) ([]int64, error) {
	key := r.keys.InFlight(r.keys.Shard(conversationID), conversationID)
	now := strconv.FormatInt(r.now().UnixMilli(), 10)
	vals, err := r.rdb.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: "(" + now, Max: "+inf"}).Result()
	if err != nil {
		return nil, classify("read in-flight seqs", err)
	}
	out := make([]int64, 0, len(vals))
	for _, v := range vals {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}
