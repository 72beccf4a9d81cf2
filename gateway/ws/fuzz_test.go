package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// fuzzServer has handlers that echo, fail with any reason, panic, or answer
// something json cannot encode, chosen by the request's data.
func fuzzServer(t testing.TB) (*Server, *Conn) {
	s, err := New(testConfig(), Deps{Auth: &fakeAuth{}})
	if err != nil {
		t.Fatal(err)
	}
	h := func(_ context.Context, _ *Conn, data json.RawMessage) (any, error) {
		var in struct {
			Do     string `json:"do"`
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(data, &in)
		switch in.Do {
		case "fail":
			return nil, wire.NewError(wire.Reason(in.Reason), "fuzz")
		case "domain":
			return nil, domain.ErrBadSeq
		case "error":
			return nil, errors.New("plain")
		case "panic":
			panic(in.Reason)
		case "unencodable":
			return map[string]any{"f": func() {}}, nil
		}
		return map[string]json.RawMessage{"echo": data}, nil
	}
	for _, id := range []int{wire.ReqGetNewestSeq, wire.ReqSendMsg, wire.ReqMsgAck, 0, -1} {
		s.Handle(id, h)
	}
	return s, s.newConn("fuzz", 1, "jti", time.Time{}, "")
}

// FuzzDecodeAndDispatch feeds arbitrary frames to the decoder and dispatch
// table (no network): nothing panics, every answer is a JSON frame whose
// error fields agree with the error table, and a frame that decodes is
// answered under its own req_identifier, msg_incr and operation_id (or 3001
// for a gate error).
func FuzzDecodeAndDispatch(f *testing.F) {
	// The seed corpus is testdata/fuzz/FuzzDecodeAndDispatch (one file per
	// case: valid requests, every decode error, handler errors, panics).
	s, c := fuzzServer(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		in, identified, werr := decodeRequest(msg)
		o := s.dispatch(context.Background(), c, msg, nil)
		out := s.encodeOutcome(o)

		var got frame
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("answer %q is not JSON: %v", out.Bytes(), err)
		}
		if !bytes.HasPrefix(got.Data, []byte("{")) {
			t.Fatalf("answer data is not an object: %s", got.Data)
		}
		if got.ErrCode != 0 {
			row := wire.Lookup(wire.Reason(got.ErrMsg))
			if row.ErrCode != got.ErrCode || got.reason() != got.ErrMsg {
				t.Fatalf("err_code %d, err_msg %q, data.reason %q disagree", got.ErrCode, got.ErrMsg, got.reason())
			}
		}
		switch {
		case werr != nil && !identified:
			if got.ReqIdentifier != wire.PushError || got.ErrMsg != string(wire.ReasonBadRequest) {
				t.Fatalf("undecodable frame answered %+v", got)
			}
		case o.gate:
			if got.ReqIdentifier != wire.PushError || !IsGateReason(wire.Reason(got.ErrMsg)) {
				t.Fatalf("gate answer %+v", got)
			}
		default:
			if got.ReqIdentifier != in.ReqIdentifier || got.MsgIncr != in.MsgIncr || got.OperationID != in.OperationID {
				t.Fatalf("answer %+v does not echo %+v", got, in.Meta)
			}
			if werr != nil && got.ErrMsg != string(werr.Reason) {
				t.Fatalf("decode error %v answered %q", werr, got.ErrMsg)
			}
		}
	})
}
