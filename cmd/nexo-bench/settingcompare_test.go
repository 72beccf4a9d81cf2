package main

import (
	"slices"
	"testing"
)

// TestCompareSettings: two-phase switches stay on the running server,
// other keys become a second server's NEXO_ variables, and the two kinds
// do not mix.
func TestCompareSettings(t *testing.T) {
	tests := []struct {
		spec    string
		env     []string
		wantErr bool
	}{
		{"", nil, false},
		{"two_phase.enabled=false", nil, false},
		{"two_phase.enabled=false,two_phase.fail_open=on", nil, false},
		{"search.enabled=false", []string{"NEXO_SEARCH_ENABLED=false"}, false},
		{"search.enabled=false, save.batch_size=64", []string{"NEXO_SEARCH_ENABLED=false", "NEXO_SAVE_BATCH_SIZE=64"}, false},
		{"search.enabled=false,two_phase.enabled=false", nil, true},
		{"search.enabled", nil, true},
	}
	for _, tc := range tests {
		env, err := compareSettings(tc.spec)
		if (err != nil) != tc.wantErr || !slices.Equal(env, tc.env) {
			t.Errorf("compareSettings(%q) = %q, %v; want %q, error %v", tc.spec, env, err, tc.env, tc.wantErr)
		}
	}
}
