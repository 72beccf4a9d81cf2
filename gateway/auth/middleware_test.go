package auth_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/ut"

	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
)

func TestMiddleware(t *testing.T) {
	iss, ver, _ := newAuth(t)
	ctx := context.Background()
	live, err := iss.Issue(ctx, "dave", 7)
	if err != nil {
		t.Fatal(err)
	}
	old, err := iss.Issue(ctx, "dave", 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Issue(ctx, "dave", 5); err != nil { // replaces old
		t.Fatal(err)
	}

	h := server.New()
	h.GET("/me", auth.Middleware(ver, discardLogger()), func(ctx context.Context, c *app.RequestContext) {
		a, ok1 := auth.ClaimsOf(c)
		b, ok2 := auth.ClaimsFromContext(ctx)
		if !ok1 || !ok2 || a != b {
			c.JSON(500, wire.OK("claims not passed on"))
			return
		}
		c.JSON(200, wire.OK(a.UserID))
	})

	tests := []struct {
		name    string
		headers []ut.Header
		status  int
		reason  wire.Reason
	}{
		{"bearer", []ut.Header{{Key: "Authorization", Value: "Bearer " + live.Token}}, 200, ""},
		{"bearer lower case", []ut.Header{{Key: "Authorization", Value: "bearer " + live.Token}}, 200, ""},
		{"token header", []ut.Header{{Key: "token", Value: live.Token}}, 200, ""},
		{"nothing", nil, 401, wire.ReasonTokenMissing},
		{"empty bearer", []ut.Header{{Key: "Authorization", Value: "Bearer "}}, 401, wire.ReasonTokenInvalid},
		{"basic auth", []ut.Header{{Key: "Authorization", Value: "Basic ZGF2ZTpwdw=="}}, 401, wire.ReasonTokenInvalid},
		{"garbage", []ut.Header{{Key: "Authorization", Value: "Bearer abc.def.ghi"}}, 401, wire.ReasonTokenInvalid},
		{"replaced", []ut.Header{{Key: "token", Value: old.Token}}, 401, wire.ReasonTokenRevoked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := ut.PerformRequest(h.Engine, "GET", "/me", nil, tc.headers...)
			resp := w.Result()
			var env struct {
				ErrCode int             `json:"err_code"`
				ErrMsg  string          `json:"err_msg"`
				Data    json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(resp.Body(), &env); err != nil {
				t.Fatalf("body %q: %v", resp.Body(), err)
			}
			if resp.StatusCode() != tc.status {
				t.Fatalf("status %d, want %d (body %s)", resp.StatusCode(), tc.status, resp.Body())
			}
			if tc.reason == "" {
				if env.ErrCode != 0 || string(env.Data) != `"dave"` {
					t.Fatalf("body %s", resp.Body())
				}
				return
			}
			if env.ErrMsg != string(tc.reason) || env.ErrCode != wire.Lookup(tc.reason).ErrCode {
				t.Fatalf("got %d %q, want %q (body %s)", env.ErrCode, env.ErrMsg, tc.reason, resp.Body())
			}
		})
	}
}
