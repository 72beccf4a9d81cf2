package api_test

import (
	"encoding/json"
	"testing"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/wire"
)

// FuzzDecodeJSON feeds arbitrary bodies to the strict decoder every HTTP
// handler and WebSocket request uses (the seed corpus is
// testdata/fuzz/FuzzDecodeJSON plus the golden cases): it never panics,
// every refusal is bad_request or body_too_long, and whatever it accepts
// is a JSON object that encoding/json reads the same way, with no
// duplicate names (a second parser must not see another value).
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"user_id":"a","seq":1,"content":{"text":"x"},"seqs":[1,2],"custom":{"k":[1,{"a":null}]}}`,
		`{"user_id":"a","user_id":"b"}`, `{"USER_ID":"a"}`, `{"custom":{"x":"\ud800"}}`, `{"seq":1e30}`, `{"note":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req strictReq
		err := api.DecodeJSON(body, 4096, &req)
		if err != nil {
			var we *wire.Error
			if !asWire(err, &we) || (we.Reason != wire.ReasonBadRequest && we.Reason != wire.ReasonBodyTooLong) {
				t.Fatalf("body %q: error %v is not bad_request/body_too_long", body, err)
			}
			return
		}
		var again strictReq
		if err := json.Unmarshal(body, &again); err != nil {
			t.Fatalf("accepted %q, but encoding/json refuses it: %v", body, err)
		}
		a, _ := json.Marshal(req)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("accepted %q: decoded %s, encoding/json reads %s", body, a, b)
		}
	})
}
