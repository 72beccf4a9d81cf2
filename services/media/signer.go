package media

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// Signer signs and checks the URLs Nexo serves itself (the local
// backend's downloads and part uploads): HMAC-SHA256 over the method, the
// path and every query parameter but sig, so a URL works for exactly the
// key, variant, upload and part it names, until its exp (Unix ms).
type Signer struct {
	key []byte
	now func() time.Time
}

// NewSigner returns a signer with a secret shared by every instance (cmd
// derives it from jwt.secret); now may be nil (time.Now).
func NewSigner(secret []byte, now func() time.Time) *Signer {
	if now == nil {
		now = time.Now
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("nexo object urls v1"))
	return &Signer{key: mac.Sum(nil), now: now}
}

func (s *Signer) mac(method, path string, q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "sig" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "%s\n%s\n", method, path)
	for _, k := range keys {
		fmt.Fprintf(m, "%s=%s\n", k, strings.Join(q[k], ","))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Sign returns path?query with exp and sig added.
func (s *Signer) Sign(method, path string, q url.Values, exp time.Time) string {
	q.Set("exp", strconv.FormatInt(exp.UnixMilli(), 10))
	q.Set("sig", s.mac(method, path, q))
	return path + "?" + q.Encode()
}

// Verify checks a signed request: domain.ErrURLInvalid for a missing or
// wrong signature, domain.ErrURLExpired past exp. The signature is checked
// first, so an altered exp is invalid, not expired.
func (s *Signer) Verify(method, path string, q url.Values) error {
	sig := q.Get("sig")
	if sig == "" || !hmac.Equal([]byte(sig), []byte(s.mac(method, path, q))) {
		return domain.NewError(domain.ErrURLInvalid, "the URL's signature does not match; ask GET /object/url for a new one")
	}
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil {
		return domain.NewError(domain.ErrURLInvalid, "the URL has no valid exp")
	}
	if s.now().UnixMilli() > exp {
		return domain.NewError(domain.ErrURLExpired, "the URL expired; ask GET /object/url for a new one")
	}
	return nil
}
