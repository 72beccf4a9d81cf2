package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// TestSearchReindexCommand: on a migrated SQLite file with stored
// messages, `nexo search reindex` indexes the searchable ones, prints what
// it did and draws its progress on stderr; --since bounds it.
func TestSearchReindexCommand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nexo.db")
	env := []string{"NEXO_SQLITE_PATH=" + path}
	if code, _, stderr := runCLI(t, env, "search", "reindex"); code != exitFailure || !strings.Contains(stderr, "nexo migrate") {
		t.Fatalf("before migrate: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, env, "migrate"); code != exitOK {
		t.Fatalf("migrate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	ctx := context.Background()
	db, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []domain.Message
	for seq := int64(1); seq <= 3; seq++ {
		m := domain.Message{ServerMsgID: fmt.Sprintf("s%d", seq), ClientMsgID: fmt.Sprintf("c%d", seq),
			ConversationID: "si_alice_bob", Seq: seq, SessionType: domain.SessionSingle, SenderID: "alice", RecvID: "bob",
			MsgType: domain.MsgText, Content: domain.Content{Text: "hello there"}, Status: domain.StatusNormal,
			SendAt: 1_700_000_000_000 + seq}
		if seq == 2 {
			m.MsgType, m.Content = domain.MsgPicture, domain.Content{Image: "https://x/p.png"}
		}
		msgs = append(msgs, m)
	}
	if _, err := store.NewMessageRepo(db).SaveBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	code, stdout, stderr := runCLI(t, env, "search", "reindex")
	if code != exitOK || !strings.Contains(stdout, "3 messages read, 2 searchable") || !strings.Contains(stderr, "reindex") {
		t.Fatalf("reindex: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, env, "search", "reindex", "--since", "1700000000003")
	if code != exitOK || !strings.Contains(stdout, "1 messages read, 1 searchable") {
		t.Fatalf("reindex --since ms: exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, env, "search", "reindex", "--since", "2030-01-01T00:00:00Z")
	if code != exitOK || !strings.Contains(stdout, "0 messages read") {
		t.Fatalf("reindex --since RFC 3339: exit %d, stdout %q", code, stdout)
	}
}

func TestSearchReindexUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"search"}, "nexo search reindex"},
		{[]string{"search", "nope"}, "nexo search reindex"},
		{[]string{"config"}, "nexo config check"},
		{[]string{"search", "reindex", "--since", "yesterday"}, "RFC 3339"},
		{[]string{"search", "reindex", "--since", "-5"}, "negative"},
	}
	for _, tc := range tests {
		if code, _, stderr := runCLI(t, nil, tc.args...); code != exitUsage || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d, stderr ∋ %q", tc.args, code, stderr, exitUsage, tc.stderr)
		}
	}
	if code, _, stderr := runCLI(t, nil, "search", "reindex", "--help"); code != exitOK || !strings.Contains(stderr, "-since") {
		t.Errorf("--help: exit %d, stderr %q", code, stderr)
	}
}
