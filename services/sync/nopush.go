package sync

import (
	"context"
	"log/slog"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/expirable"
)

// NoPushStore lists a user's single-chat conversations set to recv_msg_opt
// 1 (store.ConversationRepo).
type NoPushStore interface {
	NoPushSingle(ctx context.Context, ownerID string) ([]string, error)
}

// noPushCacheSize bounds the users whose settings one process keeps.
const noPushCacheSize = 100_000

// NoPushCache answers "does userID want no push for this single chat"
// (recv_msg_opt 1) for the deliver stage without a database query per
// message: one query per user per sync.recv_opt_cache_ttl, usually
// returning nothing. Conversations.Update invalidates the user at once in
// this process; other processes see the change within the TTL
// (docs/sync.md). Safe for concurrent use.
type NoPushCache struct {
	store NoPushStore
	cache *lru.LRU[string, []string]
	log   *slog.Logger
}

// NewNoPushCache returns the cache over st with entries kept for ttl.
func NewNoPushCache(st NoPushStore, ttl time.Duration, log *slog.Logger) *NoPushCache {
	return &NoPushCache{store: st, cache: lru.NewLRU[string, []string](noPushCacheSize, nil, ttl), log: log}
}

// NoPush reports whether userID set conversationID to recv_msg_opt 1. A
// database error answers false (push: a muted user may get one push, a
// message is never lost) and is logged; the next message queries again.
func (c *NoPushCache) NoPush(ctx context.Context, userID, conversationID string) bool {
	ids, ok := c.cache.Get(userID)
	if !ok {
		var err error
		if ids, err = c.store.NoPushSingle(ctx, userID); err != nil {
			c.log.Warn("recv_msg_opt not readable: pushing", "user_id", userID, "conversation_id", conversationID, "err", err)
			return false
		}
		c.cache.Add(userID, ids)
	}
	return slices.Contains(ids, conversationID)
}

// Invalidate drops userID's settings, so the next message reads them again.
func (c *NoPushCache) Invalidate(userID string) { c.cache.Remove(userID) }
