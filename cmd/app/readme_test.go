package app

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestReadmeWebSocketQuickstart sends the README's WebSocket quickstart
// frame, exactly as written, the way its websocat line connects (token and
// platform_id in the query), and checks the documented outcome: an ACK for
// alice and a 2001 push for bob (issue 15 item 18).
func TestReadmeWebSocketQuickstart(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "<!-- quickstart-frame")
	if !ok {
		t.Fatal("README.md lost its quickstart-frame marker")
	}
	_, block, _ := strings.Cut(after, "```json\n")
	line, _, _ := strings.Cut(block, "\n")
	if !strings.HasPrefix(line, `{"req_identifier":1003`) {
		t.Fatalf("quickstart frame = %q", line)
	}

	_, base, _, _ := runApp(t, embeddedConfig(t))
	alice := dialURL(t, base, "/ws?token="+user(t, base, "alice")+"&platform_id=5", "alice", "")
	bob := dial(t, base, "bob", user(t, base, "bob"))
	ch := make(chan frame, 1)
	alice.mu.Lock()
	alice.waiting["1"] = ch
	alice.mu.Unlock()
	if err := alice.conn.WriteMessage(websocket.TextMessage, []byte(line)); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-ch:
		if f.ErrCode != 0 || f.field("ack_type") != "accepted" || f.field("conversation_id") != "si_alice_bob" {
			t.Fatalf("the README's frame was answered %s %s", f.ErrMsg, f.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the README's frame")
	}
	bob.waitPushes(2001, "bob's push of the README message", func(f []frame) bool {
		return len(f) == 1 && strings.Contains(string(f[0].Data), "hi bob")
	})
}
