package routes_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/common/ut"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/api/apitest"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store/storetest"
)

// withLimits turns the login and registration limits on, on a Redis
// limiter of the test's own prefix.
func withLimits(t *testing.T, l configs.Limits) func(*accountWiring) {
	rdb, prefix := storetest.Redis(t)
	t.Cleanup(func() { storetest.DeletePrefix(rdb, "rate:"+prefix) })
	return func(w *accountWiring) {
		w.acct.Limits = limits.NewAccounts(limits.New(rdb, prefix, nil, nil), l)
	}
}

func loginJSON(user, password string) string {
	return fmt.Sprintf(`{"user_id":%q,"password":%q,"platform_id":5}`, user, password)
}

// wantLimited fails unless r is 429 too_many_requests with a retry-after.
func expectLimited(t *testing.T, r answer) {
	t.Helper()
	apitest.Err(t, r, wire.ReasonTooManyRequests, "")
	var d wire.ErrorData
	_ = json.Unmarshal(r.Data, &d)
	if d.RetryAfterMs <= 0 {
		t.Fatalf("no retry_after_ms: %s", r.Raw)
	}
}

// TestLoginAccountLimit: after the burst of wrong passwords
// the account is refused with too_many_requests — even with the right
// password — until the retry-after; a success clears the count; another
// account is not affected.
func TestLoginAccountLimit(t *testing.T) {
	t.Parallel()
	hour := configs.Rate{Rate: 1, Period: time.Hour, Burst: 5}
	e := newAccountEnv(t, withLimits(t, configs.Limits{LoginAccount: hour}))
	for _, u := range []string{"alice", "bob"} {
		apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"`+u+`","nickname":"n","password":"correct horse"}`, ""))
	}
	// A success clears earlier misses.
	for range 4 {
		apitest.Err(t, e.do(t, "POST", "/auth/login", loginJSON("alice", "wrong"), ""), wire.ReasonBadCredentials, "")
	}
	e.login(t, "alice", "correct horse", 5)
	for range 5 {
		apitest.Err(t, e.do(t, "POST", "/auth/login", loginJSON("alice", "wrong"), ""), wire.ReasonBadCredentials, "")
	}
	expectLimited(t, e.do(t, "POST", "/auth/login", loginJSON("alice", "correct horse"), ""))
	e.login(t, "bob", "correct horse", 5)
	// An unknown account is limited the same way (no enumeration by timing the limit).
	for range 5 {
		apitest.Err(t, e.do(t, "POST", "/auth/login", loginJSON("nobody", "x"), ""), wire.ReasonBadCredentials, "")
	}
	expectLimited(t, e.do(t, "POST", "/auth/login", loginJSON("nobody", "x"), ""))
}

// TestLoginAndRegisterIPLimits: every login attempt from one IP counts,
// whatever the account; registrations per IP too; X-Forwarded-For from an
// untrusted peer does not buy a fresh budget.
func TestLoginAndRegisterIPLimits(t *testing.T) {
	t.Parallel()
	hour := func(n int) configs.Rate { return configs.Rate{Rate: 1, Period: time.Hour, Burst: n} }
	e := newAccountEnv(t, withLimits(t, configs.Limits{LoginIP: hour(4), RegisterIP: hour(2)}))
	apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"u1","nickname":"n","password":"correct horse"}`, ""))
	apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"u2","nickname":"n","password":"correct horse"}`, ""))
	expectLimited(t, e.do(t, "POST", "/user/register", `{"user_id":"u3","nickname":"n","password":"correct horse"}`, ""))

	for i := range 4 {
		apitest.Err(t, e.do(t, "POST", "/auth/login", loginJSON(fmt.Sprint("x", i), "wrong"), ""), wire.ReasonBadCredentials, "")
	}
	expectLimited(t, e.do(t, "POST", "/auth/login", loginJSON("u1", "correct horse"), ""))
	body := loginJSON("u1", "correct horse")
	res := ut.PerformRequest(e.srv.Hertz().Engine, "POST", "/auth/login", &ut.Body{Body: strings.NewReader(body), Len: len(body)},
		ut.Header{Key: "Content-Type", Value: "application/json"}, ut.Header{Key: "X-Forwarded-For", Value: "203.0.113.9"}).Result()
	if res.StatusCode() != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("spoofed X-Forwarded-For: %d %s (Retry-After %q)", res.StatusCode(), res.Body(), res.Header.Get("Retry-After"))
	}
}

// TestLoginBackoff: past the account's burst of wrong
// passwords, each further failure doubles the wait (too_many_requests with
// retry_after_ms), up to limits.login_backoff.max — even for the right
// password; a success after the wait clears the count. Short durations,
// polled with a deadline.
func TestLoginBackoff(t *testing.T) {
	t.Parallel()
	e := newAccountEnv(t, withLimits(t, configs.Limits{
		LoginAccount: configs.Rate{Rate: 1, Period: time.Second, Burst: 2},
		LoginBackoff: configs.Backoff{Max: 4 * time.Second, Window: time.Hour},
	}))
	apitest.OK(t, e.do(t, "POST", "/user/register", `{"user_id":"carol","nickname":"n","password":"correct horse"}`, ""))
	retryAfter := func(r answer) time.Duration {
		t.Helper()
		expectLimited(t, r)
		var d wire.ErrorData
		_ = json.Unmarshal(r.Data, &d)
		return time.Duration(d.RetryAfterMs) * time.Millisecond
	}
	// attempt retries a login until it is no longer refused (the wait
	// passed) and returns the answer.
	attempt := func(password string) answer {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			r := e.do(t, "POST", "/auth/login", loginJSON("carol", password), "")
			if r.ErrMsg != string(wire.ReasonTooManyRequests) {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("still refused after 15 s: %s", r.Raw)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for range 2 {
		apitest.Err(t, e.do(t, "POST", "/auth/login", loginJSON("carol", "wrong"), ""), wire.ReasonBadCredentials, "")
	}
	// The rule's own wait (one attempt per second), then 2, 4, 4 s. Seconds,
	// not milliseconds: two logins on a loaded machine can take 100 ms.
	if got := retryAfter(e.do(t, "POST", "/auth/login", loginJSON("carol", "correct horse"), "")); got > time.Second {
		t.Fatalf("after the burst: retry after %v, want at most 1s", got)
	}
	for _, want := range []time.Duration{2 * time.Second, 4 * time.Second, 4 * time.Second} {
		apitest.Err(t, attempt("wrong"), wire.ReasonBadCredentials, "")
		failedAt := time.Now()
		got := retryAfter(e.do(t, "POST", "/auth/login", loginJSON("carol", "correct horse"), ""))
		// Up to want, less the time since the failure (a busy machine).
		if low := want - time.Since(failedAt) - 20*time.Millisecond; got < low || got > want+10*time.Millisecond {
			t.Fatalf("retry after %v, want about %v", got, want)
		}
	}
	apitest.OK(t, attempt("correct horse"))
	// The success cleared the count: the burst is free again.
	for range 2 {
		apitest.Err(t, e.do(t, "POST", "/auth/login", loginJSON("carol", "wrong"), ""), wire.ReasonBadCredentials, "")
	}
	apitest.Err(t, attempt("wrong"), wire.ReasonBadCredentials, "")
	if got := retryAfter(e.do(t, "POST", "/auth/login", loginJSON("carol", "correct horse"), "")); got > 2*time.Second {
		t.Fatalf("after a success, the first backoff: retry after %v, want at most 2s", got)
	}
}
