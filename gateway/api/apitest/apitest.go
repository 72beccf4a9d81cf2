// Package apitest performs in-process HTTP requests on a Hertz engine and
// checks the answer's envelope: the helpers the gateway's and the route
// table's tests share. Only tests import it.
package apitest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cloudwego/hertz/pkg/common/ut"
	"github.com/cloudwego/hertz/pkg/route"

	"github.com/nexo-im/nexo/gateway/wire"
)

// Answer is one HTTP answer: its status and its decoded envelope; Raw is
// the body as sent.
type Answer struct {
	Status  int             `json:"-"`
	ErrCode int             `json:"err_code"`
	ErrMsg  string          `json:"err_msg"`
	Data    json.RawMessage `json:"data"`
	Raw     string          `json:"-"`
}

// Detail returns data.detail of an error envelope.
func (r Answer) Detail() string {
	var d wire.ErrorData
	_ = json.Unmarshal(r.Data, &d)
	return d.Detail
}

// Decode decodes data into v, failing t when it does not fit.
func (r Answer) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("data %s: %v", r.Data, err)
	}
}

// Do performs method path on engine with a JSON body ("" sends none) and a
// bearer token ("" sends none); a body that is not an envelope fails t.
func Do(t testing.TB, engine *route.Engine, method, path, body, token string) Answer {
	t.Helper()
	var headers []ut.Header
	if token != "" {
		headers = append(headers, ut.Header{Key: "Authorization", Value: "Bearer " + token})
	}
	var b *ut.Body
	if body != "" {
		headers = append(headers, ut.Header{Key: "Content-Type", Value: "application/json"})
		b = &ut.Body{Body: strings.NewReader(body), Len: len(body)}
	}
	res := ut.PerformRequest(engine, method, path, b, headers...).Result()
	r := Answer{Status: res.StatusCode(), Raw: string(res.Body())}
	if err := json.Unmarshal(res.Body(), &r); err != nil {
		t.Fatalf("%s %s: body %q is not an envelope: %v", method, path, res.Body(), err)
	}
	return r
}

// OK fails t unless r is a 200 success envelope.
func OK(t testing.TB, r Answer) {
	t.Helper()
	if r.Status != 200 || r.ErrCode != 0 || r.ErrMsg != "" {
		t.Fatalf("want 200 ok, got %d: %s", r.Status, r.Raw)
	}
}

// Err fails t unless r is the error envelope of reason (status and code
// from the error table) and, when field is set, its detail mentions field.
func Err(t testing.TB, r Answer, reason wire.Reason, field string) {
	t.Helper()
	code := wire.Lookup(reason)
	if r.Status != code.HTTPStatus || r.ErrCode != code.ErrCode || r.ErrMsg != string(reason) {
		t.Fatalf("want %d %d %s, got %d: %s", code.HTTPStatus, code.ErrCode, reason, r.Status, r.Raw)
	}
	var d wire.ErrorData
	if err := json.Unmarshal(r.Data, &d); err != nil || d.Reason != reason {
		t.Fatalf("data.reason: got %s (%v)", r.Data, err)
	}
	if field != "" && !strings.Contains(d.Detail, field) {
		t.Fatalf("detail %q does not name %q", d.Detail, field)
	}
}
