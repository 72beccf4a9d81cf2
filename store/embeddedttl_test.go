package store

import (
	"testing"
	"time"
)

// The TTL walk of the embedded Redis takes at most 1/ttlDutyCycle of the
// time between walks, and walks come between embeddedTTLTick and
// embeddedTTLMaxTick apart.
func TestNextTTLTickBoundsTheWalksShare(t *testing.T) {
	for _, tc := range []struct{ took, want time.Duration }{
		{0, embeddedTTLTick},
		{time.Millisecond, embeddedTTLTick},
		{30 * time.Millisecond, 3 * time.Second},
		{time.Second, embeddedTTLMaxTick},
	} {
		if got := nextTTLTick(tc.took); got != tc.want {
			t.Errorf("walk of %v: next in %v, want %v", tc.took, got, tc.want)
		}
	}
}
