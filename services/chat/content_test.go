package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "[1]" + strings.Repeat("}", depth-1)
}

// customCases are content.custom values at the edge of what MariaDB's JSON
// columns store (measured with JSON_VALID on 10.11: 31 levels pass, 32
// fail; a lone surrogate escape fails, a pair passes).
var customCases = []struct {
	name   string
	custom string
	ok     bool
}{
	{"flat", `{"k":"v"}`, true},
	{"31 levels", nested(31), true},
	{"32 levels", nested(32), false},
	{"32 arrays", strings.Repeat("[", 32) + strings.Repeat("]", 32), false},
	{"9995 levels", strings.Repeat("[", 9995) + strings.Repeat("]", 9995), false},
	{"brackets in strings do not count", `{"s":"` + strings.Repeat("[{", 40) + `"}`, true},
	{"surrogate pair", `{"s":"\ud83d\ude00"}`, true},
	{"lone high surrogate", `{"s":"\ud800"}`, false},
	{"lone high surrogate, upper case", `{"s":"\uD800x"}`, false},
	{"high surrogate then a non-surrogate", `{"s":"\ud800\u0041"}`, false},
	{"lone low surrogate", `{"s":"\udc00"}`, false},
	{"surrogate in a key", `{"\udfff":1}`, false},
	{"escaped backslash before u", `{"s":"\\ud800"}`, true},
	{"NUL escape", `{"s":"\u0000"}`, true},
	{"invalid UTF-8", "{\"s\":\"\xff\"}", false},
}

func TestCustomStorableRules(t *testing.T) {
	for _, c := range customCases {
		t.Run(c.name, func(t *testing.T) {
			r := SendRequest{ClientMsgID: "c1", SessionType: 1, RecvID: "bob", MsgType: 110,
				Content: ContentJSON{Custom: json.RawMessage(c.custom)}}
			_, err := r.validate("alice", 1<<20)
			if c.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var we *wire.Error
			if !asWire(err, &we) || we.Reason != wire.ReasonBadRequest || !strings.Contains(we.Detail, "content.custom") {
				t.Fatalf("got %v, want bad_request naming content.custom", err)
			}
		})
	}
	r := SendRequest{ClientMsgID: "c1", SessionType: 1, RecvID: "bob", MsgType: 101, Content: ContentJSON{Text: strings.Repeat("x", maxTextBytes+1)}}
	if _, err := r.validate("alice", 1<<20); err == nil || wire.FromError(err).Reason != wire.ReasonBodyTooLong {
		t.Fatalf("text over the TEXT column: %v", err)
	}
}

// TestValidationMatchesStore: on MariaDB, a custom value validation accepts
// is stored and one it refuses is refused by the database too (so the rule
// is exactly the store's); on both backends everything accepted reads back
// and decodes with encoding/json.
func TestValidationMatchesStore(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			db := b.Open(t)
			storetest.AddUsers(t, db, "alice", "bob")
			repo := store.NewMessageRepo(db)
			ctx := context.Background()
			for i, c := range customCases {
				if c.name == "invalid UTF-8" && b.Name == "sqlite" {
					continue // SQLite stores any bytes; nothing to compare
				}
				req := SendRequest{ClientMsgID: fmt.Sprintf("c%d", i), SessionType: 1, RecvID: "bob", MsgType: 110,
					Content: ContentJSON{Custom: json.RawMessage(c.custom)}}
				m, verr := req.validate("alice", 1<<20)
				if verr != nil { // store what the client sent, as an unchecked server would
					m, _ = (&SendRequest{ClientMsgID: req.ClientMsgID, SessionType: 1, RecvID: "bob", MsgType: 110,
						Content: ContentJSON{Custom: json.RawMessage(`{}`)}}).validate("alice", 1<<20)
					m.Content.Custom = c.custom
				}
				m.ServerMsgID, m.Seq, m.SendAt = fmt.Sprintf("s%d", i), int64(i+1), 1
				_, serr := repo.SaveBatch(ctx, []domain.Message{m})
				if b.Name == "mariadb" && (serr == nil) != (verr == nil) {
					t.Errorf("%s: validation %v, MariaDB %v", c.name, verr, serr)
				}
				if verr != nil {
					continue
				}
				if serr != nil {
					t.Fatalf("%s: accepted but not stored: %v", c.name, serr)
				}
				got, err := repo.BySeqs(ctx, m.ConversationID, []int64{m.Seq})
				if err != nil || len(got) != 1 {
					t.Fatalf("%s: read back %v %v", c.name, got, err)
				}
				var v any
				if err := json.Unmarshal([]byte(got[0].Content.Custom), &v); err != nil {
					t.Fatalf("%s: stored custom does not decode: %v", c.name, err)
				}
			}
		})
	}
}

// BenchmarkCheckStorableJSON is the accept-time content check's cost per
// message, which must stay a small part of a send's: a 64-byte text as
// nexo-bench sends it, and a 1 KiB content.custom nested 8 deep. Run:
//
//	go test -run '^$' -bench CheckStorableJSON ./services/chat
func BenchmarkCheckStorableJSON(b *testing.B) {
	for _, c := range []struct{ name, js string }{
		{"text-64B", `{"text":"` + strings.Repeat("x", 64) + `"}`},
		{"custom-1KiB", `{"custom":` + strings.Replace(nested(8), "[1]", `["`+strings.Repeat("é", 480)+`"]`, 1) + `}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			js := []byte(c.js)
			if why := checkStorableJSON(js); why != "" {
				b.Fatal(why)
			}
			b.SetBytes(int64(len(js)))
			for b.Loop() {
				_ = checkStorableJSON(js)
			}
		})
	}
}
