package limits

import (
	"context"
	"testing"
	"time"

	"github.com/nexo-im/nexo/store/storetest"
)

// TestUploadsShared: the upload limit is one budget per user across
// instances; rate 0 and a nil limit let everything through.
func TestUploadsShared(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			ctx := context.Background()
			rule := Rule{Rate: 2, Period: time.Hour, Burst: 2}
			a := NewUploads(New(rdb, keys.Prefix, nil, nil), rule)
			b := NewUploads(New(rdb, keys.Prefix, nil, nil), rule)
			for _, u := range []*Uploads{a, b} {
				if err := u.AllowUpload(ctx, "alice"); err != nil {
					t.Fatal(err)
				}
			}
			refusedAfter(t, a.AllowUpload(ctx, "alice"))
			if err := b.AllowUpload(ctx, "bob"); err != nil {
				t.Fatalf("another user: %v", err)
			}
			off := NewUploads(New(rdb, keys.Prefix, nil, nil), Rule{})
			for range 5 {
				if err := off.AllowUpload(ctx, "alice"); err != nil {
					t.Fatalf("rate 0: %v", err)
				}
			}
			if err := (*Uploads)(nil).AllowUpload(ctx, "alice"); err != nil {
				t.Fatalf("nil: %v", err)
			}
		})
	}
}
