package account

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

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
// send, so each (receiver, sender) decision is cached: one served is never
// older than ttl, so a block or policy change made through another
// instance applies within ttl, and one made through this instance at once
// (Forget). A decision past nine tenths of its ttl is answered from the
// cache and decided again in the background, so a conversation that keeps
// talking never waits for the database on its sends, and the database is
// asked about as often as with a plain expiry (docs/moderation.md). Safe
// for concurrent use.
type DMGate struct {
	policies DMPolicies
	blocks   Blocks
	shared   SharedGroups
	ttl      time.Duration
	now      func() time.Time
	// decided maps "receiver\x00sender" to the decision.
	decided *lru.LRU[string, decision]
	// generation counts Forget calls: a decision read before one is not
	// stored after it.
	generation atomic.Uint64
	// refreshes runs the background decisions, one per key at a time.
	refreshes singleflight.Group
	decisions *prometheus.CounterVec // by "on": send, background
}

// decision is a cached answer: refusal nil means allowed.
type decision struct {
	refusal error
	at      time.Time
}

// DefaultDMGateTTL is how long a decision is reused: how late a change
// made on another instance may apply.
const DefaultDMGateTTL = time.Second

// NewDMGate returns the gate on its stores, caching up to 100,000
// decisions for ttl each. shared may be nil: shared_groups then refuses
// everyone. reg (may be nil) gets nexo_dm_gate_decisions_total{on}: the
// decisions made while a send waited (on="send") and in the background.
func NewDMGate(policies DMPolicies, blocks Blocks, shared SharedGroups, ttl time.Duration, reg prometheus.Registerer) *DMGate {
	g := &DMGate{
		policies: policies, blocks: blocks, shared: shared, ttl: ttl, now: time.Now,
		decided: lru.NewLRU[string, decision](100_000, nil, ttl),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nexo", Name: "dm_gate_decisions_total",
			Help: "Single-chat permission decisions (blocks, dm_policy) read from the database: on=send while a send or typing indicator waited, on=background ahead of the cached decision's expiry.",
		}, []string{"on"}),
	}
	if reg != nil {
		reg.MustRegister(g.decisions)
	}
	return g
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
	if d, ok := g.decided.Get(key); ok {
		if g.now().Sub(d.at) >= g.ttl*9/10 {
			g.refresh(ctx, key, sender, recv)
		}
		return d.refusal
	}
	return g.decideAndStore(ctx, key, sender, recv, "send")
}

// decideAndStore decides from the stores and caches the answer unless a
// Forget ran meanwhile (the answer may predate the change it announced).
func (g *DMGate) decideAndStore(ctx context.Context, key, sender, recv, on string) error {
	g.decisions.WithLabelValues(on).Inc()
	gen, at := g.generation.Load(), g.now()
	refusal, err := g.decide(ctx, sender, recv)
	if err != nil {
		return err
	}
	if g.generation.Load() == gen {
		g.decided.Add(key, decision{refusal: refusal, at: at})
	}
	return refusal
}

// refresh decides key again in the background, once at a time per key
// (a send meanwhile joins the one in flight without waiting for it), so
// the database is asked once per pair per nine tenths of ttl, as against
// once per ttl with a plain expiry. The send's context is not the refresh's: the send has its
// answer and may end first.
func (g *DMGate) refresh(ctx context.Context, key, sender, recv string) {
	g.refreshes.DoChan(key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.ttl)
		defer cancel()
		// An error leaves the old decision to age out: the next send past
		// ttl decides again and gets the error itself.
		return nil, g.decideAndStore(rctx, key, sender, recv, "background")
	})
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
	g.generation.Add(1)
	prefix := user + "\x00"
	for _, k := range g.decided.Keys() {
		if strings.HasPrefix(k, prefix) {
			g.decided.Remove(k)
		}
	}
}
