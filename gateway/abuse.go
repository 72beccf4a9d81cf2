package gateway

import (
	"context"
	"errors"
	"net"
	"runtime"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"golang.org/x/sync/semaphore"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/wire"
)

// Names of the login and registration limits (metrics label, Redis key part).
const (
	limitLoginIP      = "login_ip"
	limitLoginAccount = "login_account"
	limitRegisterIP   = "register_ip"
)

func ruleOf(r configs.Rate) limits.Rule {
	return limits.Rule{Rate: r.Rate, Period: r.Period, Burst: r.Burst}
}

// hashGate bounds the password hashes computed at once (auth.hash_concurrency,
// default half the CPUs, at least one): a login flood queues here instead
// of taking every core from the other routes (issue 13 #3). A request that waits
// longer than auth.hash_wait is refused with server_busy.
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

// do runs f holding a hashing slot.
func (g *hashGate) do(ctx context.Context, f func() error) error {
	wctx, cancel := context.WithTimeout(ctx, g.wait)
	err := g.sem.Acquire(wctx, 1)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e := wire.NewError(wire.ReasonServerBusy, "too many password checks in progress; retry")
		e.RetryAfter = time.Second
		return e
	}
	defer g.sem.Release(1)
	return f()
}

// clientIPFunc returns how the server tells a request's client address:
// the TCP peer, or — when the peer is one of http.trusted_proxies — the
// address those proxies put in X-Forwarded-For / X-Real-IP.
func clientIPFunc(trusted []string) func(c *app.RequestContext) string {
	cidrs := trustedNets(trusted)
	if len(cidrs) == 0 {
		return peerIP
	}
	return app.ClientIPWithOption(app.ClientIPOptions{
		RemoteIPHeaders: []string{"X-Forwarded-For", "X-Real-IP"},
		TrustedCIDRs:    cidrs,
	})
}

// trustedNets parses http.trusted_proxies (CIDRs or bare addresses,
// already validated).
func trustedNets(list []string) []*net.IPNet {
	var cidrs []*net.IPNet
	for _, s := range list {
		if _, n, err := net.ParseCIDR(s); err == nil {
			cidrs = append(cidrs, n)
		} else if ip := net.ParseIP(s); ip != nil {
			bits := 128
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			cidrs = append(cidrs, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
		}
	}
	return cidrs
}

func containsIP(nets []*net.IPNet, ip net.IP) bool {
	if ip == nil {
		return false
	}
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// peerIP is the TCP peer's address without the port.
func peerIP(c *app.RequestContext) string {
	addr := c.RemoteAddr()
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// allow checks one limit; without a limiter (tests) everything passes.
func (s *Server) allow(ctx context.Context, kind, subject string, r configs.Rate) error {
	if s.deps.Limiter == nil {
		return nil
	}
	return s.deps.Limiter.Allow(ctx, kind, subject, ruleOf(r))
}

// allowLogin checks one login limit before any hashing: its backoff block
// (set by earlier failures, on any instance; the longer wait, so first),
// then its rule (every attempt counts).
func (s *Server) allowLogin(ctx context.Context, kind, subject string, r configs.Rate) error {
	if s.deps.Limiter != nil && !s.loginBackoff(r).Off() {
		if err := s.deps.Limiter.Blocked(ctx, kind, subject); err != nil {
			return err
		}
	}
	return s.allow(ctx, kind, subject, r)
}

// loginBackoff is the exponential backoff of a login limit
// (limits.login_backoff over the limit's own rule).
func (s *Server) loginBackoff(r configs.Rate) limits.Backoff {
	b := s.deps.Limits.LoginBackoff
	return limits.BackoffOf(ruleOf(r), b.Max, b.Window)
}

// loginFailed counts a wrong password against the client IP and the
// account; past a limit's burst of failures, each one doubles its wait.
func (s *Server) loginFailed(ctx context.Context, ip, userID string) {
	if s.deps.Limiter == nil {
		return
	}
	s.deps.Limiter.Failed(ctx, limitLoginIP, ip, s.loginBackoff(s.deps.Limits.LoginIP))
	s.deps.Limiter.Failed(ctx, limitLoginAccount, userID, s.loginBackoff(s.deps.Limits.LoginAccount))
}

// resetLoginAccount clears an account's failed attempts after a success.
func (s *Server) resetLoginAccount(ctx context.Context, userID string) {
	if s.deps.Limiter == nil || s.deps.Limits.LoginAccount.Rate == 0 {
		return
	}
	if err := s.deps.Limiter.Reset(ctx, limitLoginAccount, userID); err != nil && !errors.Is(err, context.Canceled) {
		s.log.WarnContext(ctx, "reset login attempts failed", "user_id", userID, "err", err)
	}
}
