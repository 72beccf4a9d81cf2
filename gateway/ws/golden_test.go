package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/frames from the encoder")

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "frames", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("golden is not JSON: %v", err)
	}
	return buf.Bytes()
}

// goldenTs is the ts every fixture carries; the encoder's real ts (checked
// to be the current time) is replaced by it before the comparison.
const goldenTs = "1767225600000"

var tsField = regexp.MustCompile(`"ts":(\d+)`)

// fixTs checks that the frame carries exactly one "ts" within a minute of now
// and returns the frame with that ts replaced by goldenTs.
func fixTs(t *testing.T, b []byte) []byte {
	t.Helper()
	m := tsField.FindAllSubmatch(b, -1)
	if len(m) != 1 {
		t.Fatalf("frame has %d ts fields, want 1: %s", len(m), b)
	}
	ts, _ := strconv.ParseInt(string(m[0][1]), 10, 64)
	if now := time.Now().UnixMilli(); ts < now-60_000 || ts > now+1_000 {
		t.Fatalf("ts %d is not the current time (%d)", ts, now)
	}
	return tsField.ReplaceAll(b, []byte(`"ts":`+goldenTs))
}

// checkGolden compares an encoded frame with its fixture (compacted), after
// checking its ts is the current time (fixTs).
func checkGolden(t *testing.T, name string, f Frame) {
	t.Helper()
	f = Frame{data: fixTs(t, f.Bytes())}
	if *update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, f.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		buf.WriteByte('\n')
		if err := os.WriteFile(filepath.Join("testdata", "frames", name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := compact(t, readGolden(t, name)); !bytes.Equal(f.Bytes(), want) {
		t.Fatalf("%s:\n got %s\nwant %s", name, f.Bytes(), want)
	}
}

// ackJSON has the shape of the 1003 answer (gateway/chat.AckJSON), which
// this package cannot import.
type ackJSON struct {
	AckType        string `json:"ack_type"`
	ServerMsgID    string `json:"server_msg_id"`
	ClientMsgID    string `json:"client_msg_id"`
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	SendAt         int64  `json:"send_at"`
}

// The request fixture decodes, goes through dispatch and produces the
// response fixtures (success and request error).
func TestGoldenRequestAndResponses(t *testing.T) {
	s := newTestServer(t, testConfig())
	req := readGolden(t, "request_1003.json")
	in, identified, werr := decodeRequest(req)
	if werr != nil || !identified || in.ReqIdentifier != wire.ReqSendMsg || in.MsgIncr != "17" || in.OperationID != "op-7f3a" {
		t.Fatalf("decode: %+v %v %v", in, identified, werr)
	}
	var send struct {
		ClientMsgID string `json:"client_msg_id"`
		Content     struct{ Text string }
	}
	if err := json.Unmarshal(in.Data, &send); err != nil || send.ClientMsgID != "c-0001" || send.Content.Text != "hi <bob> & co" {
		t.Fatalf("data %s: %+v %v", in.Data, send, err)
	}

	s.Handle(wire.ReqSendMsg, func(context.Context, *Conn, json.RawMessage) (any, error) {
		return ackJSON{AckType: wire.AckAccepted, ServerMsgID: "0193a4c2-7b1e-7c3d-9f00-5a1b2c3d4e5f",
			ClientMsgID: "c-0001", ConversationID: "si_alice_bob", Seq: 42, SendAt: 1767225600000}, nil
	})
	c := s.newConn("alice", 5, "jti", time.Time{}, "")
	checkGolden(t, "response_1003.json", s.encodeOutcome(s.dispatch(context.Background(), c, req, nil)))

	s.Handle(wire.ReqSendMsg, func(context.Context, *Conn, json.RawMessage) (any, error) {
		return nil, domain.ErrNotGroupMember
	})
	req2 := bytes.Replace(bytes.Replace(req, []byte(`"17"`), []byte(`"18"`), 1), []byte(`op-7f3a`), []byte(`op-7f3b`), 1)
	checkGolden(t, "response_error.json", s.encodeOutcome(s.dispatch(context.Background(), c, req2, nil)))
}

// The frames the gateway makes itself come out exactly as documented.
func TestGoldenGatewayPushes(t *testing.T) {
	checkGolden(t, "push_2002.json", kickFrame(configs.LoginSinglePerPlatform))
	checkGolden(t, "push_3001.json", errorFrame(tokenExpired()))
}

// Pushes built by other packages: the envelope around their data encodes
// as in the fixture (data kept byte for byte, HTML not escaped).
func TestGoldenPushEnvelopes(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   int
	}{{"push_2001.json", wire.PushMsg}, {"push_2101.json", wire.PushAck}, {"push_2102.json", wire.PushGroupNotify}} {
		t.Run(tc.name, func(t *testing.T) {
			var g frame
			if err := json.Unmarshal(readGolden(t, tc.name), &g); err != nil {
				t.Fatal(err)
			}
			f, err := EncodeFrame(wire.Response{ReqIdentifier: tc.id, Data: json.RawMessage(compact(t, g.Data))})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, f)
		})
	}
}

// Every server fixture decodes into the frame shape, and an error frame's
// err_code, err_msg and data.reason agree with the error table.
func TestGoldenFramesDecode(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "frames", "*.json"))
	if err != nil || len(files) < 8 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		if name == "request_1003.json" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dec := json.NewDecoder(bytes.NewReader(readGolden(t, name)))
			dec.DisallowUnknownFields()
			var f frame
			if err := dec.Decode(&f); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(bytes.TrimSpace(f.Data), []byte("{")) {
				t.Fatalf("data is not an object: %s", f.Data)
			}
			if f.ErrCode == 0 {
				if f.ErrMsg != "" {
					t.Fatalf("err_msg %q with err_code 0", f.ErrMsg)
				}
				return
			}
			code := wire.Lookup(wire.Reason(f.ErrMsg))
			if code.Reason != wire.Reason(f.ErrMsg) || code.ErrCode != f.ErrCode || f.reason() != f.ErrMsg {
				t.Fatalf("err_code %d err_msg %q data.reason %q disagree with the table", f.ErrCode, f.ErrMsg, f.reason())
			}
		})
	}
}
