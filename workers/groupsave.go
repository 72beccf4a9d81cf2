package workers

import (
	"context"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// groupSaver is a MessageSaver that merges the batches the shards hand to
// the database at the same time into one transaction (domain.GroupCommit):
// a lone batch waits up to save.batch_wait for other shards' batches, and
// batches that arrive while one is being saved go together as soon as it
// commits. Under load the shards' small batches (a shard's save consumer
// holds a few messages per read) become one transaction of all of them: one
// statement set, one COMMIT and one fsync instead of one per shard. Shards
// own disjoint conversations, so merging changes no row's outcome. A merged
// save refused for its data is retried batch by batch, so one shard's bad
// row fails that batch alone, exactly as without merging; a retryable
// failure (the database away, a deadlock) is every batch's, and each
// shard's stage retries its own. See docs/pipeline.md, "Save batches
// across shards".
type groupSaver struct {
	MessageSaver
	gc *domain.GroupCommit[[]domain.Message, []store.SaveResult]
}

// newGroupSaver wraps next; SaveFailed goes straight to next. A batch that
// finds no save in flight waits up to linger (save.batch_wait) for other
// shards' batches, unless the batches waiting already hold size
// (save.batch_size) messages; 0 saves it at once.
func newGroupSaver(next MessageSaver, linger time.Duration, size int) *groupSaver {
	g := &groupSaver{MessageSaver: next}
	g.gc = domain.NewGroupCommit(0, g.flush)
	if linger > 0 {
		g.gc.WithLinger(linger, func(queued []*domain.Call[[]domain.Message, []store.SaveResult]) bool {
			n := 0
			for _, c := range queued {
				n += len(c.Req)
			}
			return n >= size
		})
	}
	return g
}

// SaveBatch saves msgs, alone or merged with other shards' batches, and
// returns their results in order (store.MessageRepo.SaveBatch).
func (g *groupSaver) SaveBatch(ctx context.Context, msgs []domain.Message) ([]store.SaveResult, error) {
	return g.gc.Do(ctx, msgs)
}

func (g *groupSaver) flush(ctx context.Context, batch []*domain.Call[[]domain.Message, []store.SaveResult]) {
	if len(batch) > 1 && distinct(batch) {
		var all []domain.Message
		for _, c := range batch {
			all = append(all, c.Req...)
		}
		res, err := g.MessageSaver.SaveBatch(ctx, all)
		switch {
		case err == nil && len(res) == len(all):
			for _, c := range batch {
				c.Res, res = res[:len(c.Req):len(c.Req)], res[len(c.Req):]
			}
			return
		case store.IsRetryable(err):
			// The database is away or a lock gave way: every batch would
			// fail alike, and each shard's stage retries its own.
			for _, c := range batch {
				c.Err = err
			}
			return
		}
	}
	for _, c := range batch {
		c.Res, c.Err = g.MessageSaver.SaveBatch(ctx, c.Req)
	}
}

// distinct reports whether no server_msg_id repeats across the batches
// (SaveBatch's precondition): a reclaimed entry can be in two batches of a
// shard at once, and those are saved one after the other.
func distinct(batch []*domain.Call[[]domain.Message, []store.SaveResult]) bool {
	seen := map[string]bool{}
	for _, c := range batch {
		for i := range c.Req {
			id := c.Req[i].ServerMsgID
			if seen[id] {
				return false
			}
			seen[id] = true
		}
	}
	return true
}
