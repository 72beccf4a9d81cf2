package ws

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/nexo-im/nexo/gateway/wire"
)

// stdEncode is what EncodeFrame produced with encoding/json: the reference
// its faster encoder must match byte for byte.
func stdEncode(t *testing.T, r wire.Response) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

type frameProbe struct {
	Text    string          `json:"text,omitempty"`
	IDs     []string        `json:"ids"`
	Seq     int64           `json:"seq,omitempty"`
	Custom  json.RawMessage `json:"custom,omitempty"`
	Nested  *frameProbe     `json:"nested,omitempty"`
	Flags   map[string]bool `json:"flags,omitempty"`
	Ratio   float64         `json:"ratio"`
	private int
}

// Frames are byte-for-byte what encoding/json (HTML escaping off) makes of
// the same value: clients and the golden frames were written against it.
func TestEncodeFrameMatchesEncodingJSON(t *testing.T) {
	texts := []string{"", "plain", "“quoted” — dash…", "end \u2028", "<b>&amp;</b>", "line\nbreak\t\"quoted\" \\", "\u2028\u2029", "emoji 😀 中文",
		"bad \xff\xfe utf-8", "\x00\x01\x1f control", "lone \xed\xa0\x80 surrogate"}
	for _, text := range texts {
		for _, data := range []any{
			nil,
			map[string]any{"text": text, "n": 1},
			frameProbe{Text: text},
			&frameProbe{Text: text, IDs: []string{text, "b"}, Seq: 9007199254740993, Custom: json.RawMessage(" { \"a\" : [1, 2] ,\"b\":\"<x>\" } "),
				Nested: &frameProbe{IDs: []string{}}, Flags: map[string]bool{"z": true, "a": false}, Ratio: 0.1, private: 1},
			[]frameProbe{{}, {Ratio: 1e21}},
		} {
			r := wire.Response{ReqIdentifier: wire.PushMsg, MsgIncr: text, OperationID: "op", ErrMsg: text, Data: data, Ts: 1764000000000}
			want := stdEncode(t, r)
			if data == nil {
				want = stdEncode(t, wire.Response{ReqIdentifier: r.ReqIdentifier, MsgIncr: r.MsgIncr, OperationID: r.OperationID,
					ErrMsg: r.ErrMsg, Data: emptyObject, Ts: r.Ts})
			}
			f, err := EncodeFrame(r)
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			if !bytes.Equal(f.Bytes(), want) {
				t.Errorf("text %q, data %T:\n got %s\nwant %s", text, data, f.Bytes(), want)
			}
		}
	}
}

// A value encoding/json refuses is refused, not sent half-encoded.
func TestEncodeFrameRefusesWhatJSONCannotEncode(t *testing.T) {
	for _, data := range []any{
		map[string]any{"f": func() {}},
		frameProbe{Custom: json.RawMessage(`{"unterminated":`)},
	} {
		if f, err := EncodeFrame(wire.Response{ReqIdentifier: wire.PushMsg, Data: data}); err == nil {
			t.Errorf("%T encoded as %s, want an error", data, f.Bytes())
		}
	}
}
