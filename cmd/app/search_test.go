package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
)

// TestSearchEndToEnd: a message sent through the pipeline becomes
// searchable by its parties (indexed by its own stage after the save) and
// never by a stranger, on the embedded backend (SQLite FTS5) and on
// MariaDB (Mroonga).
func TestSearchEndToEnd(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { t.Parallel(); searchEndToEnd(t, embeddedConfig(t)) })
	t.Run("mariadb", func(t *testing.T) { t.Parallel(); searchEndToEnd(t, realConfig(t)) })
}

func searchEndToEnd(t *testing.T, cfg configs.Config) {
	_, base, _, _ := runApp(t, cfg)
	alice, bob, carol := user(t, base, "sealice"), user(t, base, "sebob"), user(t, base, "secarol")
	if st, _ := call(t, "POST", base+"/msg/send", `{"client_msg_id":"se-1","session_type":1,"recv_id":"sebob","msg_type":101,"content":{"text":"今天天气很好 100% sure"}}`, alice); st != 200 {
		t.Fatalf("send: %d", st)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, body := call(t, "POST", base+"/msg/search", `{"keyword":"天气"}`, bob)
		data, _ := body["data"].(map[string]any)
		results, _ := data["results"].([]any)
		if st == 200 && len(results) == 1 {
			hl := results[0].(map[string]any)["highlight"]
			if fmt.Sprint(hl) != "map[field:text ranges:[map[end:4 start:2]]]" {
				t.Fatalf("highlight %v", hl)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not searchable within 5 s: %d %v", st, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, kw := range []string{"100%", "天气"} {
		st, body := call(t, "POST", base+"/msg/search", fmt.Sprintf(`{"keyword":%q}`, kw), carol)
		if data, _ := body["data"].(map[string]any); st != 200 || len(data["results"].([]any)) != 0 {
			t.Fatalf("a stranger searching %q: %d %v", kw, st, body)
		}
	}
	if st, body := call(t, "GET", base+"/user/search?keyword=sebo", "", carol); st != 200 || fmt.Sprint(body["data"]) != "map[results:[map[avatar: nickname:n user_id:sebob]]]" {
		t.Fatalf("user search: %d %v", st, body)
	}
}
