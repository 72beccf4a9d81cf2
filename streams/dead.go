package streams

import (
	"context"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Dead-letter entries keep what an operator needs to find and judge the
// entry — for a message its seq, route, ids (inside the body's first bytes)
// and the error — not necessarily the whole body: a poison sender must not
// be able to grow Redis by the size of everything it sends.
const (
	// bodyBytesSuffix names, after the body's field, the original body's
	// length when it was cut ("m_bytes").
	bodyBytesSuffix = "_bytes"
	// maxDeadField caps every field but the body.
	maxDeadField = 256
)

// CapDeadFields returns the fields of a dead-letter entry made from an
// entry's fields: every field cut to 256 bytes, the body (field bodyField;
// "m" for the pipeline's messages) to maxBody bytes with its original
// length in "<bodyField>_bytes" when cut. Cuts fall on UTF-8 boundaries.
func CapDeadFields(values map[string]any, bodyField string, maxBody int) map[string]any {
	out := make(map[string]any, len(values)+1)
	for k, v := range values {
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
		}
		limit := maxDeadField
		if k == bodyField {
			limit = maxBody
			if len(s) > limit {
				out[bodyField+bodyBytesSuffix] = strconv.Itoa(len(s))
			}
		}
		out[k] = cutUTF8(s, limit)
	}
	return out
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// TrimDead bounds a dead-letter stream: at most maxLen entries
// (XTRIM MAXLEN) and none older than maxAge (XTRIM MINID); a zero
// bound is not applied. Two single-key commands: safe on Redis Cluster.
func TrimDead(ctx context.Context, rdb redis.UniversalClient, key string, maxLen int64, maxAge time.Duration) error {
	if maxLen > 0 {
		if err := rdb.XTrimMaxLen(ctx, key, maxLen).Err(); err != nil {
			return fmt.Errorf("trim %s to %d entries: %w", key, maxLen, err)
		}
	}
	if maxAge > 0 {
		minID := strconv.FormatInt(time.Now().Add(-maxAge).UnixMilli(), 10) + "-0"
		if err := rdb.XTrimMinID(ctx, key, minID).Err(); err != nil {
			return fmt.Errorf("trim %s older than %v: %w", key, maxAge, err)
		}
	}
	return nil
}
