package routes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/common/ut"

	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
)

// BenchmarkUserInfoUnderLoginFlood measures GET /user/info while 8 clients
// send wrong-password logins as fast as they can (bcrypt cost 10, limits
// off so every login hashes), with the hashing gate sized to the cores
// (auth.hash_concurrency 0) and, for comparison, unbounded. It reports the
// p50 and p99 latency of /user/info. Run:
//
//	go test -run '^$' -bench UserInfoUnderLoginFlood -benchtime 200x ./gateway/routes/
func BenchmarkUserInfoUnderLoginFlood(b *testing.B) {
	for _, bc := range []struct {
		name        string
		concurrency int
	}{{"gate=cores", 0}, {"gate=unbounded", 1 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			passwords, err := auth.NewPasswords(10)
			if err != nil {
				b.Fatal(err)
			}
			e := newAccountEnv(b, func(w *accountWiring) {
				w.acct.Passwords = passwords
				w.acct.Auth.HashConcurrency = bc.concurrency
				w.acct.Auth.HashWait = time.Minute
			})
			engine := e.srv.Hertz().Engine
			post := func(path, body string) *ut.ResponseRecorder {
				return ut.PerformRequest(engine, "POST", path, &ut.Body{Body: strings.NewReader(body), Len: len(body)},
					ut.Header{Key: "Content-Type", Value: "application/json"})
			}
			post("/user/register", `{"user_id":"alice","nickname":"n","password":"correct horse"}`)
			var tok tokenAnswer
			r := post("/auth/login", loginJSON("alice", "correct horse")).Result()
			if err := decodeEnvelope(r.Body(), &tok); err != nil || tok.Token == "" {
				b.Fatalf("login: %s", r.Body())
			}

			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						post("/auth/login", loginJSON(fmt.Sprint("mallory", i), "wrong"))
					}
				}()
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				res := ut.PerformRequest(engine, "GET", "/user/info", nil, ut.Header{Key: "Authorization", Value: "Bearer " + tok.Token}).Result()
				lat = append(lat, time.Since(start))
				if res.StatusCode() != 200 {
					b.Fatalf("info: %d %s", res.StatusCode(), res.Body())
				}
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// decodeData decodes the data of an envelope.
func decodeEnvelope(body []byte, v any) error {
	return json.Unmarshal(body, &wire.Envelope{Data: v})
}
