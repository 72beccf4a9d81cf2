package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cloudwego/hertz/pkg/common/ut"

	"github.com/nexo-im/nexo/gateway/api/apitest"
	"github.com/nexo-im/nexo/gateway/wire"
)

// TestContentType: a JSON body must come as application/json; a body with
// another type or none is 415 unsupported_media_type and changes nothing;
// requests without a body need no type.
func TestContentType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := `{"user_id":"ctype","nickname":"C","password":"correct horse"}`
	post := func(ct string) response {
		t.Helper()
		var headers []ut.Header
		if ct != "" {
			headers = append(headers, ut.Header{Key: "Content-Type", Value: ct})
		}
		res := ut.PerformRequest(e.srv.Hertz().Engine, "POST", "/user/register",
			&ut.Body{Body: strings.NewReader(body), Len: len(body)}, headers...).Result()
		r := response{Status: res.StatusCode(), Raw: string(res.Body())}
		if err := json.Unmarshal(res.Body(), &r); err != nil {
			t.Fatalf("body %q: %v", res.Body(), err)
		}
		return r
	}
	for _, ct := range []string{"", "application/x-www-form-urlencoded", "text/plain", "text/plain;charset=UTF-8",
		"multipart/form-data; boundary=x", "application/json; charset=latin1", "application/jsonx", "application/json;;"} {
		before := e.snapshot(t)
		apitest.Err(t, post(ct), wire.ReasonUnsupportedMediaType, "Content-Type")
		if after := e.snapshot(t); !before.equal(after) {
			t.Fatalf("Content-Type %q: a refused request wrote something", ct)
		}
	}
	apitest.OK(t, post("Application/JSON; charset=UTF-8"))
	// Bodiless requests need no type.
	tok := e.login(t, "ctype", "correct horse", 5)
	apitest.OK(t, e.do(t, "GET", "/user/info", "", tok.Token))
	apitest.OK(t, e.do(t, "POST", "/auth/logout", "", tok.Token))
}
