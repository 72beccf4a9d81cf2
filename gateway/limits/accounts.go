package limits

import (
	"context"
	"errors"

	"github.com/nexo-im/nexo/configs"
)

// Names of the login and registration limits (metrics label, key part).
const (
	KindLoginIP      = "login_ip"
	KindLoginAccount = "login_account"
	KindRegisterIP   = "register_ip"
)

// Accounts are the limits on account access (limits.login_ip,
// login_account, register_ip and login_backoff), shared by every
// instance: registrations per client IP, and login attempts per client IP
// and per account, each backing off exponentially after failed logins.
// A nil *Accounts allows everything.
type Accounts struct {
	l   *Limiter
	cfg configs.Limits
}

// NewAccounts returns the account limits of cfg on l.
func NewAccounts(l *Limiter, cfg configs.Limits) *Accounts {
	return &Accounts{l: l, cfg: cfg}
}

func ruleOf(r configs.Rate) Rule {
	return Rule{Rate: r.Rate, Period: r.Period, Burst: r.Burst}
}

// AllowRegister counts one registration from ip: nil, or
// too_many_requests with RetryAfter.
func (a *Accounts) AllowRegister(ctx context.Context, ip string) error {
	if a == nil {
		return nil
	}
	return a.l.Allow(ctx, KindRegisterIP, ip, ruleOf(a.cfg.RegisterIP))
}

// AllowLogin counts one login attempt from ip on userID, before any
// password is hashed: nil, or too_many_requests with RetryAfter while
// either limit is exhausted or backing off after failures.
func (a *Accounts) AllowLogin(ctx context.Context, ip, userID string) error {
	if a == nil {
		return nil
	}
	if err := a.allowLogin(ctx, KindLoginIP, ip, a.cfg.LoginIP); err != nil {
		return err
	}
	return a.allowLogin(ctx, KindLoginAccount, userID, a.cfg.LoginAccount)
}

// allowLogin checks one login limit: its backoff block (set by earlier
// failures, on any instance; the longer wait, so first), then its rule
// (every attempt counts).
func (a *Accounts) allowLogin(ctx context.Context, kind, subject string, r configs.Rate) error {
	if !a.backoff(r).Off() {
		if err := a.l.Blocked(ctx, kind, subject); err != nil {
			return err
		}
	}
	return a.l.Allow(ctx, kind, subject, ruleOf(r))
}

// backoff is the exponential backoff of a login limit
// (limits.login_backoff over the limit's own rule).
func (a *Accounts) backoff(r configs.Rate) Backoff {
	b := a.cfg.LoginBackoff
	return BackoffOf(ruleOf(r), b.Max, b.Window)
}

// LoginFailed counts a wrong password against ip and userID; past a
// limit's burst of failures, each one doubles its wait.
func (a *Accounts) LoginFailed(ctx context.Context, ip, userID string) {
	if a == nil {
		return
	}
	a.l.Failed(ctx, KindLoginIP, ip, a.backoff(a.cfg.LoginIP))
	a.l.Failed(ctx, KindLoginAccount, userID, a.backoff(a.cfg.LoginAccount))
}

// LoginSucceeded clears userID's failed attempts (a failure to reach Redis
// is logged: the count then drains on its own).
func (a *Accounts) LoginSucceeded(ctx context.Context, userID string) {
	if a == nil || a.cfg.LoginAccount.Rate == 0 {
		return
	}
	if err := a.l.Reset(ctx, KindLoginAccount, userID); err != nil && !errors.Is(err, context.Canceled) {
		a.l.log.WarnContext(ctx, "reset login attempts failed", "user_id", userID, "err", err)
	}
}
