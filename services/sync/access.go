package sync

import (
	"context"
	"errors"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/streams"
)

// GroupBounds gives a group member's visibility bounds (group.Members):
// the first seq it may see and the last (0 = no cap; set when it quit or
// was kicked). Someone who never joined is domain.ErrNotConversationMember.
type GroupBounds interface {
	Bounds(ctx context.Context, groupID, userID string) (minSeq, maxSeq int64, err error)
}

// SavedMax reads a conversation's highest saved seq (store.SeqRepo).
type SavedMax interface {
	MaxSeq(ctx context.Context, conversationID string) (int64, error)
}

// IssuedSeqs reads the highest seq the allocator has handed out for a
// conversation, saved or not (RedisIssued); 0 when it knows none.
type IssuedSeqs interface {
	Issued(ctx context.Context, conversationID string) (int64, error)
}

// Users tells which user IDs are registered (store.UserRepo).
type Users interface {
	Existing(ctx context.Context, ids []string) (map[string]bool, error)
}

// Bounds is a member's visibility in one conversation: seqs Min..Cap, or
// Min and up when Cap is 0.
type Bounds struct {
	Min int64 // >= 1
	Cap int64 // 0 = no cap
}

// Clamp caps seq at the member's last visible seq.
func (b Bounds) Clamp(seq int64) int64 {
	if b.Cap > 0 && seq > b.Cap {
		return b.Cap
	}
	return seq
}

// Access answers who belongs to a conversation and which seqs exist in it.
// The highest issued seq of each conversation is cached in process as a
// lower bound (it only grows), so an ACK at or below a seq seen before
// costs no I/O; a higher one re-reads the database and Redis.
type Access struct {
	groups GroupBounds
	saved  SavedMax
	issued IssuedSeqs
	known  *lru.Cache[string, int64]
	peers  *chat.KnownUsers // nil: no users to check peers against
}

// knownSeqs is how many conversations' highest seqs a process remembers.
const knownSeqs = 100_000

// NewAccess returns the membership and seq checks. groups may be nil until
// group chat is wired (group conversations are then refused); issued may be
// nil (only saved seqs count); users, when set, makes a single chat's peer
// exist before anything is written about the conversation (no
// conversation rows or cursors for made-up peers).
func NewAccess(groups GroupBounds, saved SavedMax, issued IssuedSeqs, users Users) *Access {
	known, _ := lru.New[string, int64](knownSeqs)
	a := &Access{groups: groups, saved: saved, issued: issued, known: known}
	if users != nil {
		a.peers = chat.NewKnownUsers(users)
	}
	return a
}

// peerExists asks the database once per peer and process (an hour at most):
// users are never deleted, so a user seen once exists.
func (a *Access) peerExists(ctx context.Context, id string) (bool, error) {
	if a.peers == nil {
		return true, nil
	}
	return a.peers.Exists(ctx, id)
}

// Member returns userID's visibility in conversationID: a party of a single
// chat sees everything, a group member (active or not) its join..cap
// window. Errors: domain.ErrInvalidArgument for a malformed ID,
// domain.ErrNotConversationMember, or the group lookup's transient error.
func (a *Access) Member(ctx context.Context, userID, conversationID string) (Bounds, error) {
	t, ok := domain.ConversationSessionType(conversationID)
	switch {
	case !ok:
		return Bounds{}, fmt.Errorf("conversation_id %q: %w", conversationID, domain.ErrInvalidArgument)
	case t == domain.SessionSingle:
		peer, member := domain.SinglePeer(conversationID, userID)
		if !member {
			return Bounds{}, fmt.Errorf("%s in %s: %w", userID, conversationID, domain.ErrNotConversationMember)
		}
		if peer != userID {
			ok, err := a.peerExists(ctx, peer)
			if err != nil {
				return Bounds{}, err
			}
			if !ok {
				return Bounds{}, fmt.Errorf("peer %q of %s: %w", peer, conversationID, domain.ErrUserNotFound)
			}
		}
		return Bounds{Min: 1}, nil
	}
	groupID := domain.GroupIDOf(conversationID)
	if groupID == "" {
		return Bounds{}, fmt.Errorf("conversation_id %q: %w", conversationID, domain.ErrInvalidArgument)
	}
	if a.groups == nil {
		return Bounds{}, fmt.Errorf("%s: %w", conversationID, domain.ErrNotConversationMember)
	}
	lo, hi, err := a.groups.Bounds(ctx, groupID, userID)
	if err != nil {
		return Bounds{}, err
	}
	return Bounds{Min: max(lo, 1), Cap: hi}, nil
}

// Highest returns the highest seq issued in conversationID — saved, or
// accepted and on its way (a deliver-first push can reach a client before
// the save) — reading the database and Redis only when the cached value is
// below want. A Redis failure falls back to the saved seq.
func (a *Access) Highest(ctx context.Context, conversationID string, want int64) (int64, error) {
	if v, ok := a.known.Get(conversationID); ok && v >= want {
		return v, nil
	}
	hi, err := a.saved.MaxSeq(ctx, conversationID)
	if err != nil {
		return 0, fmt.Errorf("max seq of %s: %w", conversationID, err)
	}
	if a.issued != nil {
		if v, err := a.issued.Issued(ctx, conversationID); err == nil {
			hi = max(hi, v)
		}
	}
	if v, ok := a.known.Get(conversationID); ok {
		hi = max(hi, v)
	}
	a.known.Add(conversationID, hi)
	return hi, nil
}

// CheckSeq refuses, with domain.ErrBadSeq, a seq the member cannot hold:
// below 1, above the highest seq issued in the conversation, or above the
// member's cap. A seq below the member's first visible one is allowed (it
// moves nothing).
func (a *Access) CheckSeq(ctx context.Context, conversationID string, b Bounds, seq int64) error {
	if seq < 1 {
		return fmt.Errorf("seq %d: %w", seq, domain.ErrBadSeq)
	}
	if b.Cap > 0 && seq > b.Cap {
		return fmt.Errorf("seq %d is above your last visible seq %d: %w", seq, b.Cap, domain.ErrBadSeq)
	}
	hi, err := a.Highest(ctx, conversationID, seq)
	if err != nil {
		return err
	}
	if seq > hi {
		return fmt.Errorf("seq %d is above the conversation's highest seq %d: %w", seq, hi, domain.ErrBadSeq)
	}
	return nil
}

// RedisIssued reads the pipeline's seq allocator: the hash
// {cur, ceil} of streams.Keys.Seq, whose cur is the last seq handed out.
type RedisIssued struct {
	rdb  redis.UniversalClient
	keys streams.Keys
}

// NewRedisIssued returns the allocator reader over the pipeline's keys.
func NewRedisIssued(rdb redis.UniversalClient, keys streams.Keys) *RedisIssued {
	return &RedisIssued{rdb: rdb, keys: keys}
}

// Issued implements IssuedSeqs: 0 when the allocator holds nothing for the
// conversation (never used, or Redis lost it).
func (r *RedisIssued) Issued(ctx context.Context, conversationID string) (int64, error) {
	v, err := r.rdb.HGet(ctx, r.keys.Seq(r.keys.Shard(conversationID), conversationID), "cur").Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}
