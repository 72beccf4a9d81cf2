package limits

import "context"

// KindExport counts data exports (GET /user/export).
const KindExport = "export"

// Exports is the per-user limit on data exports (limits.export), shared
// by every instance.
type Exports struct {
	l    *Limiter
	rule Rule
}

// NewExports returns the export limit; a rule with rate 0 disables it.
func NewExports(l *Limiter, rule Rule) *Exports { return &Exports{l: l, rule: rule} }

// AllowExport counts one export of userID: nil, or too_many_requests with
// RetryAfter.
func (e *Exports) AllowExport(ctx context.Context, userID string) error {
	if e == nil || e.rule.Rate == 0 {
		return nil
	}
	return e.l.AllowN(ctx, KindExport, userID, e.rule, 1)
}
