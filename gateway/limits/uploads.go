package limits

import "context"

// KindUpload is the per-user upload limit's name (metrics label, key part).
const KindUpload = "upload"

// Uploads is the per-user limit on uploads (objects.upload): every direct
// upload and every multipart initiation counts one, on every instance.
type Uploads struct {
	l    *Limiter
	rule Rule
}

// NewUploads returns the upload limit; a rule with rate 0 disables it.
func NewUploads(l *Limiter, rule Rule) *Uploads { return &Uploads{l: l, rule: rule} }

// AllowUpload counts one upload of userID: nil, or too_many_requests with
// RetryAfter.
func (u *Uploads) AllowUpload(ctx context.Context, userID string) error {
	if u == nil || u.rule.Rate == 0 {
		return nil
	}
	return u.l.AllowN(ctx, KindUpload, userID, u.rule, 1)
}
