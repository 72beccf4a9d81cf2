package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModerationKeys: the word filter's keys load from the file and the
// environment, and a bad action, an empty entry, a missing words file or
// a word too long is an error naming the key (and the file's line).
func TestModerationKeys(t *testing.T) {
	dir := t.TempDir()
	words := filepath.Join(dir, "words.txt")
	if err := os.WriteFile(words, []byte("# c\n\n alpha \nbeta\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load("", []string{"NEXO_MODERATION_BLOCKED_WORDS=one,two", "NEXO_MODERATION_BLOCKED_WORDS_FILE=" + words, "NEXO_MODERATION_ACTION=mask"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.Moderation.Words()
	if err != nil || strings.Join(got, ",") != "one,two,alpha,beta" || cfg.Moderation.Action != ModerationMask {
		t.Fatalf("words %v %v, action %q", got, err, cfg.Moderation.Action)
	}
	if err := os.WriteFile(words, []byte("ok\n"+strings.Repeat("长", MaxBlockedWordRunes+1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"NEXO_MODERATION_ACTION=delete"}, "moderation.action"},
		{[]string{"NEXO_MODERATION_BLOCKED_WORDS_FILE=" + filepath.Join(dir, "gone.txt")}, "moderation.blocked_words_file"},
		{[]string{"NEXO_MODERATION_BLOCKED_WORDS_FILE=" + words}, "line 2"},
	} {
		if _, err := Load("", tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
	c := Default()
	c.Moderation.BlockedWords = []string{"ok", "  "}
	if _, err := c.Moderation.Words(); err == nil || !strings.Contains(err.Error(), "entry 1 is empty") {
		t.Errorf("an empty entry: %v", err)
	}
}
