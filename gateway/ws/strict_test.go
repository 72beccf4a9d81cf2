package ws

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nexo-im/nexo/gateway/wire"
)

// decodeCase is one entry of testdata/decode_request.golden: a frame and
// what decodeRequest makes of it.
type decodeCase struct {
	Name  string `json:"name"`
	Frame string `json:"frame"`
	Want  string `json:"want"`
}

// TestDecodeRequestGolden pins the frame decoder's strictness, which any
// faster codec must keep: a duplicate name anywhere (envelope or data), a
// case variant of an envelope name, invalid UTF-8 or a lone surrogate is
// bad_request; OpenIM's extra members (token, send_id) are still ignored.
// -update rewrites the answers; review the diff.
func TestDecodeRequestGolden(t *testing.T) {
	path := filepath.Join("testdata", "decode_request.golden")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []decodeCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		in, identified, werr := decodeRequest([]byte(tc.Frame))
		got := fmt.Sprintf("ok req_identifier=%d msg_incr=%q operation_id=%q data=%s", in.ReqIdentifier, in.MsgIncr, in.OperationID, in.Data)
		if werr != nil {
			got = fmt.Sprintf("%v (identified=%v)", werr, identified)
		}
		if *update {
			cases[i].Want = got
			continue
		}
		if got != tc.Want {
			t.Errorf("%s: frame %s\n got  %s\n want %s", tc.Name, tc.Frame, got, tc.Want)
		}
	}
	// Invalid UTF-8 cannot sit in the golden file (it is JSON).
	for _, frame := range []string{"{\"req_identifier\":1003,\"operation_id\":\"\xff\",\"data\":{}}",
		"{\"req_identifier\":1003,\"data\":{\"text\":\"a\xc3\"}}"} {
		if _, _, werr := decodeRequest([]byte(frame)); werr == nil || werr.Reason != wire.ReasonBadRequest {
			t.Errorf("frame %q: got %v, want bad_request", frame, werr)
		}
	}
	if *update {
		out, _ := json.MarshalIndent(cases, "", "  ")
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
