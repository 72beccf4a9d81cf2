package app

import "testing"

// TestAdminAuthorized: only "Bearer <admin.token>" passes, and an empty
// admin.token lets nobody in (the comparison is constant-time; what a test
// can check is that it is exact).
func TestAdminAuthorized(t *testing.T) {
	for _, tc := range []struct {
		want, header string
		ok           bool
	}{
		{"s3cret", "Bearer s3cret", true},
		{"s3cret", "Bearer s3cre", false},
		{"s3cret", "Bearer s3cret ", false},
		{"s3cret", "bearer s3cret", false},
		{"s3cret", "s3cret", false},
		{"s3cret", "", false},
		{"", "Bearer ", false},
		{"", "", false},
	} {
		if got := adminAuthorized(tc.want, []byte(tc.header)); got != tc.ok {
			t.Errorf("admin.token %q, header %q: got %v", tc.want, tc.header, got)
		}
	}
}
