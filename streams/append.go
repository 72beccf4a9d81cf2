package streams

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Append is one entry for a later stage's queue: XADD Stream * Values...
// (field, value, ...; values are strings or []byte). The queues it serves
// are not trimmed by length: their stages delete what they have handled.
type Append struct {
	Stream string
	Values []any
}

// AppendAll adds appends in one pipelined round trip, in order: the
// synchronous send's after-save events, and a commit's on Redis Cluster
// (Commit.Appends). An error (classified as the other Redis steps') may
// leave some added: a caller that retries adds those again, and the
// stages that read these queues handle an entry twice as once.
func AppendAll(ctx context.Context, rdb redis.UniversalClient, appends []Append) error {
	if len(appends) == 0 {
		return nil
	}
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, a := range appends {
			p.XAdd(ctx, &redis.XAddArgs{Stream: a.Stream, Values: a.Values})
		}
		return nil
	})
	return classify(fmt.Sprintf("append %d entries", len(appends)), err)
}
