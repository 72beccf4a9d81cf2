package privacy

import (
	"testing"
	"time"
)

// The wait after a batch is clean_pause, or clean_pause_ratio times the
// batch's own time when that is longer: with ratio 3 the cleaner deletes
// at most a quarter of the time, however slow its deletes are.
func TestCleanerPauseFollowsTheBatch(t *testing.T) {
	cfg := CleanerConfig{Pause: 50 * time.Millisecond, PauseRatio: 3}
	for _, tc := range []struct{ took, want time.Duration }{
		{time.Millisecond, 50 * time.Millisecond},
		{100 * time.Millisecond, 300 * time.Millisecond},
		{2 * time.Second, 6 * time.Second},
	} {
		if got := cfg.pauseAfter(tc.took); got != tc.want {
			t.Errorf("after a batch of %v: wait %v, want %v", tc.took, got, tc.want)
		}
	}
	if got := (CleanerConfig{Pause: 50 * time.Millisecond}).pauseAfter(time.Second); got != 50*time.Millisecond {
		t.Errorf("ratio 0: wait %v, want clean_pause alone", got)
	}
}
