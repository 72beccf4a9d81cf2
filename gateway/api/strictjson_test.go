package api_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the decoder")

// strictReq is a request body with every shape the real ones use: strings,
// integers, a pointer, a nested object, a list and a free-form raw value.
type strictReq struct {
	UserID  string          `json:"user_id"`
	Seq     int64           `json:"seq"`
	Note    *string         `json:"note"`
	Content strictContent   `json:"content"`
	Seqs    []int64         `json:"seqs"`
	Custom  json.RawMessage `json:"custom"`
}

type strictContent struct {
	Text string `json:"text"`
}

// goldenCase is one line of testdata/strict_json.golden: a body and the
// answer DecodeJSON gives it (reason and detail; "ok" when accepted).
type goldenCase struct {
	Name string `json:"name"`
	Body string `json:"body"`
	Want string `json:"want"`
}

// TestStrictJSONGolden pins the decoding rules every JSON codec of Nexo
// must keep (a faster codec must produce the same answers): duplicate and
// case-variant keys, invalid UTF-8 and lone surrogates, type errors,
// unknown fields and trailing data. Run with -update to rewrite the
// answers after a deliberate change, and review the diff.
func TestStrictJSONGolden(t *testing.T) {
	path := filepath.Join("testdata", "strict_json.golden")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		var req strictReq
		got := "ok"
		if err := api.DecodeJSON([]byte(tc.Body), 4096, &req); err != nil {
			var we *wire.Error
			if !asWire(err, &we) {
				t.Fatalf("%s: not a wire error: %v", tc.Name, err)
			}
			got = we.Error()
		}
		if *update {
			cases[i].Want = got
			continue
		}
		if got != tc.Want {
			t.Errorf("%s: body %s\n got  %s\n want %s", tc.Name, tc.Body, got, tc.Want)
		}
	}
	if *update {
		out, _ := json.MarshalIndent(cases, "", "  ")
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The rules themselves, independent of the wording above.
	for _, body := range []string{
		`{"user_id":"a","user_id":"b"}`,
		`{"user_id":"a","User_ID":"b"}`,
		`{"USER_ID":"a"}`,
		`{"content":{"text":"a","text":"b"}}`,
		`{"content":{"Text":"a"}}`,
		`{"custom":{"k":1,"k":2}}`,
		`{"custom":{"deep":[{"k":1,"k":2}]}}`,
		`{"user_id":"\ud800"}`,
		`{"custom":{"x":"\udfff"}}`,
		"{\"user_id\":\"\xff\"}",
	} {
		var req strictReq
		err := api.DecodeJSON([]byte(body), 4096, &req)
		var we *wire.Error
		if !asWire(err, &we) || we.Reason != wire.ReasonBadRequest {
			t.Errorf("body %s: got %v, want bad_request", body, err)
		}
	}
}

func asWire(err error, we **wire.Error) bool {
	if err == nil {
		return false
	}
	w, hidden := wire.Public(err)
	*we = w
	return !hidden
}
