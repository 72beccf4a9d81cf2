package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestDecodesTheGatewayGoldenFrames: every server frame fixture of the
// gateway (gateway/ws/testdata/frames) decodes into inFrame with its ts, so
// a field the server adds never breaks the benchmark client.
func TestDecodesTheGatewayGoldenFrames(t *testing.T) {
	files, err := filepath.Glob("../../gateway/ws/testdata/frames/*.json")
	if err != nil || len(files) < 7 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, path := range files {
		if filepath.Base(path) == "request_1003.json" {
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f inFrame
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if f.Ts != 1767225600000 || f.ReqIdentifier == 0 {
			t.Errorf("%s: ts %d, req_identifier %d", path, f.Ts, f.ReqIdentifier)
		}
		if f.ErrCode != 0 && f.Data.Reason != f.ErrMsg {
			t.Errorf("%s: reason %q, err_msg %q", path, f.Data.Reason, f.ErrMsg)
		}
	}
}
