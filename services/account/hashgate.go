package account

import (
	"context"
	"runtime"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// hashGate bounds the password hashes computed at once (auth.hash_concurrency,
// default half the CPUs, at least one): a login flood queues here instead
// of taking every core from the other routes. A request that waits longer
// than auth.hash_wait is refused with server_busy.
type hashGate struct {
	sem  *semaphore.Weighted
	wait time.Duration
}

func newHashGate(cfg configs.Auth) *hashGate {
	n := cfg.HashConcurrency
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)/2)
	}
	wait := cfg.HashWait
	if wait <= 0 {
		wait = configs.Default().Auth.HashWait
	}
	return &hashGate{sem: semaphore.NewWeighted(int64(n)), wait: wait}
}

// do runs f holding a hashing slot; ctx's error if ctx ends first, or
// domain.ErrServerBusy (retry after a second) when no slot frees up within
// the wait.
func (g *hashGate) do(ctx context.Context, f func() error) error {
	wctx, cancel := context.WithTimeout(ctx, g.wait)
	err := g.sem.Acquire(wctx, 1)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &domain.Error{Kind: domain.ErrServerBusy, Detail: "too many password checks in progress; retry", RetryAfter: time.Second}
	}
	defer g.sem.Release(1)
	return f()
}
