package account

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/expirable"

	"github.com/nexo-im/nexo/domain"
)

// DMPolicies reads a user's dm_policy (store.UserRepo).
type DMPolicies interface {
	DMPolicy(ctx context.Context, id string) (domain.DMPolicy, error)
}

// SharedGroups tells which of ids are active members of a group userID is
// an active member of too (store.Contacts).
type SharedGroups interface {
	SharedGroups(ctx context.Context, userID string, ids []string) (map[string]bool, error)
}

// DMGate decides whether a user may write to another in a single chat
// (message or typing indicator): not when the receiver blocked the sender
// or the receiver's dm_policy refuses them. It runs on every single-chat
// send, so each (receiver, sender) decision is cached for ttl: a block or
// policy change made through this instance applies at once (Forget), one
// made through another instance within ttl. Safe for concurrent use.
type DMGate struct {
	policies DMPolicies
	blocks   Blocks
	shared   SharedGroups
	// decided maps "receiver\x00sender" to the refusal (nil: allowed).
	decided *lru.LRU[string, error]
}

// DefaultDMGateTTL is how long a decision is reused: how late a change
// made on another instance may apply.
const DefaultDMGateTTL = time.Second

// NewDMGate returns the gate on its stores, caching up to 100,000
// decisions for ttl each. shared may be nil: shared_groups then refuses
// everyone.
func NewDMGate(policies DMPolicies, blocks Blocks, shared SharedGroups, ttl time.Duration) *DMGate {
	return &DMGate{policies: policies, blocks: blocks, shared: shared, decided: lru.NewLRU[string, error](100_000, nil, ttl)}
}

// notAccepted is the one refusal for every cause, so a sender cannot tell
// a block from a policy.
func notAccepted(recv string) error {
	return domain.NewError(domain.ErrBlocked, fmt.Sprintf("%s does not accept messages from you", recv))
}

// CheckDM returns nil when sender may write to recv in a single chat, a
// domain.ErrBlocked error when not, or the lookup's error. Writing to
// oneself is always allowed; an unknown recv is allowed here (the caller
// decides what an unknown user means).
func (g *DMGate) CheckDM(ctx context.Context, sender, recv string) error {
	if sender == recv {
		return nil
	}
	key := recv + "\x00" + sender
	if refusal, ok := g.decided.Get(key); ok {
		return refusal
	}
	refusal, err := g.decide(ctx, sender, recv)
	if err != nil {
		return err
	}
	g.decided.Add(key, refusal)
	return refusal
}

func (g *DMGate) decide(ctx context.Context, sender, recv string) (error, error) {
	policy, err := g.policies.DMPolicy(ctx, recv)
	if errors.Is(err, domain.ErrUserNotFound) {
		// A deleted account (docs/privacy.md): chat.KnownUsers may still
		// remember it as existing for a while; this answer, cached like
		// the others, refuses it on every instance within the cache time.
		return fmt.Errorf("recv_id %s: %w", recv, domain.ErrUserNotFound), nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up dm_policy: %w", err)
	}
	switch policy {
	case domain.DMNobody:
		return notAccepted(recv), nil
	case domain.DMSharedGroups:
		if g.shared == nil {
			return notAccepted(recv), nil
		}
		shares, err := g.shared.SharedGroups(ctx, sender, []string{recv})
		if err != nil {
			return nil, fmt.Errorf("look up shared groups: %w", err)
		}
		if !shares[recv] {
			return notAccepted(recv), nil
		}
	}
	if g.blocks != nil {
		blockers, err := g.blocks.BlockersOf(ctx, sender, []string{recv})
		if err != nil {
			return nil, fmt.Errorf("look up blocks: %w", err)
		}
		if blockers[recv] {
			return notAccepted(recv), nil
		}
	}
	return nil, nil
}

// Forget drops the cached decisions about messages to user (after they
// blocked, unblocked or changed dm_policy). A nil gate does nothing.
func (g *DMGate) Forget(user string) {
	if g == nil {
		return
	}
	prefix := user + "\x00"
	for _, k := range g.decided.Keys() {
		if strings.HasPrefix(k, prefix) {
			g.decided.Remove(k)
		}
	}
}
