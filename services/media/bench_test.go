package media_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/services/media"
	"github.com/nexo-im/nexo/store/storetest"
)

// BenchmarkUpload stores direct uploads of each size class through the
// service (sniffing, hashing, the backend, the row) on each backend; b.SetBytes
// makes `go test -bench` report MB/s. Figures: docs/bench/media.md.
func BenchmarkUpload(b *testing.B) {
	for _, backend := range []string{"local", "s3"} {
		for _, size := range []int{64 << 10, 1 << 20, 8 << 20} {
			b.Run(fmt.Sprintf("%s/%dKiB", backend, size>>10), func(b *testing.B) {
				e := newEnv(b, backend, storetest.SQLite(b), func(c *configs.Objects) { c.UserQuotaBytes = 0 })
				data := bytes.Repeat([]byte("nexo media bench "), size/17+1)[:size]
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := e.svc.Upload(context.Background(), "bench", media.UploadRequest{Name: "f.bin", Size: int64(size), Body: bytes.NewReader(data)}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
