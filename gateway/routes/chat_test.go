package routes

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
)

// table records what a route table registers.
type table struct {
	http []string
	ws   []int
}

func (t *table) Route(method, path string, _ app.HandlerFunc, authenticated bool) {
	if !authenticated {
		path += " (open)"
	}
	t.http = append(t.http, method+" "+path)
}

func (t *table) Handle(reqIdentifier int, _ ws.HandlerFunc) { t.ws = append(t.ws, reqIdentifier) }

func TestChatRoutes(t *testing.T) {
	var tb table
	NewChat(nil, nil, 1<<16, nil, slog.New(slog.DiscardHandler)).Register(&tb, &tb)
	if want := []string{"POST /msg/send", "GET /msg/pull", "POST /msg/pull_by_seqs"}; !slices.Equal(tb.http, want) {
		t.Errorf("HTTP routes %v, want %v", tb.http, want)
	}
	if want := []int{wire.ReqSendMsg, wire.ReqPullMsgRange, wire.ReqPullBySeqList}; !slices.Equal(tb.ws, want) {
		t.Errorf("WS requests %v, want %v", tb.ws, want)
	}
}

// TestPullQueryIsChecked: GET /msg/pull answers bad_request naming the
// first query parameter that is not an integer, or the missing
// conversation_id, before the service is asked (here there is none).
func TestPullQueryIsChecked(t *testing.T) {
	h := NewChat(nil, nil, 1<<16, nil, slog.New(slog.DiscardHandler))
	for query, want := range map[string]string{
		"conversation_id=si_a_b&begin_seq=x&limit=y":        "begin_seq must be an integer",
		"conversation_id=si_a_b&end_seq=1.5":                "end_seq must be an integer",
		"conversation_id=si_a_b&limit=99999999999999999999": "limit must be an integer",
		"begin_seq=3": "conversation_id required",
	} {
		c := app.NewContext(0)
		c.Request.SetRequestURI("/msg/pull?" + query)
		h.httpPull(context.Background(), c)
		var body struct {
			ErrMsg string `json:"err_msg"`
			Data   struct {
				Detail string `json:"detail"`
			} `json:"data"`
		}
		if err := json.Unmarshal(c.Response.Body(), &body); err != nil {
			t.Fatalf("%s: %v in %s", query, err, c.Response.Body())
		}
		if c.Response.StatusCode() != 400 || body.ErrMsg != string(wire.ReasonBadRequest) || body.Data.Detail != want {
			t.Errorf("%s: %d %s, want 400 bad_request %q", query, c.Response.StatusCode(), c.Response.Body(), want)
		}
	}
}
