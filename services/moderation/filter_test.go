package moderation

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

func newFilter(t *testing.T, action string, words ...string) *Filter {
	t.Helper()
	f, err := NewFilter(configs.Moderation{BlockedWords: words, Action: action})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFilterFoldsCaseAndWidth(t *testing.T) {
	refuse := newFilter(t, configs.ModerationRefuse, "Spam", "坏蛋", "ｶﾀｶﾅ", "straße")
	for _, tc := range []struct {
		text    string
		refused bool
	}{
		{"buy spam now", true},
		{"BUY SPAM", true},
		{"ＳＰＡＭ！", true},                            // full-width Latin
		{"ｓｐａｍ", true},                             // full-width lower case
		{"你这个坏蛋", true},                            // CJK inside a sentence, no word boundaries
		{"カタカナ", true},                             // full-width katakana against a half-width word
		{"STRASSE", true},                          // full case folding: ß is ss
		{"spa m", false},                           // a space breaks the word
		{"坏人", false},                              // half a word
		{"", false},                                // nothing to match
		{"s\u0000pam", false},                      // a control character breaks it too
		{strings.Repeat("sp", 10000) + "am", true}, // long text, match at the end
	} {
		_, err := refuse.Check("content.text", tc.text)
		if got := errors.Is(err, domain.ErrBlockedWord); got != tc.refused {
			t.Errorf("%.40q: refused %v, want %v (err %v)", tc.text, got, tc.refused, err)
		}
		if err != nil && !strings.Contains(err.Error(), "content.text") {
			t.Errorf("the error does not name the field: %v", err)
		}
	}
}

func TestFilterMasksTheOriginalRunes(t *testing.T) {
	mask := newFilter(t, configs.ModerationMask, "spam", "ab", "bc", "坏蛋", "ss")
	for _, tc := range []struct{ in, want string }{
		{"no match", "no match"},
		{"Buy SPAM now", "Buy **** now"},
		{"ＳＰＡＭ！", "****！"}, // full-width runes masked one for one
		{"xabcx", "x***x"}, // overlapping words both masked
		{"你这个坏蛋啊", "你这个**啊"},
		{"Maß", "Ma*"}, // one rune folded into two bytes of a match
		{"é spam é", "é **** é"},
		{"buy ＳＰＡＭ, 坏蛋!", "buy ****, **!"}, // two words of different first bytes
		{"xabcdx", "x***dx"},
	} {
		got, err := mask.Check("nickname", tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got != tc.want {
			t.Errorf("mask(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFilterWithoutWordsPassesEverything(t *testing.T) {
	var nilFilter *Filter
	if got, err := nilFilter.Check("x", "spam"); err != nil || got != "spam" {
		t.Fatalf("nil filter: %q %v", got, err)
	}
	f := newFilter(t, configs.ModerationRefuse)
	if got, err := f.Check("x", "spam"); err != nil || got != "spam" || f.Words() != 0 {
		t.Fatalf("empty list: %q %v", got, err)
	}
}

func TestFilterReloadsTheFileAndKeepsTheOldListOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "words.txt")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# comment\n\n  alpha  \n")
	cfg := configs.Moderation{BlockedWords: []string{"beta"}, BlockedWordsFile: path, Action: configs.ModerationRefuse}
	f, err := NewFilter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(s string) bool {
		_, err := f.Check("t", s)
		return errors.Is(err, domain.ErrBlockedWord)
	}
	if !refused("ALPHA") || !refused("beta") || refused("gamma") || refused("# comment") {
		t.Fatal("first list not in force")
	}
	write("gamma\n")
	if err := f.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if refused("alpha") || !refused("gamma") || f.Words() != 2 {
		t.Fatalf("reloaded list not in force (%d words)", f.Words())
	}
	write("ok\n" + strings.Repeat("x", configs.MaxBlockedWordRunes+1) + "\n")
	if err := f.Reload(cfg); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a word too long: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(cfg); err == nil {
		t.Fatal("a missing file reloaded")
	}
	if !refused("gamma") {
		t.Fatal("a failed reload dropped the list in force")
	}
}

// TestFilterConcurrentReload runs checks while the list changes (go test
// -race catches a torn read).
func TestFilterConcurrentReload(t *testing.T) {
	f := newFilter(t, configs.ModerationMask, "one")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			if err := f.Reload(configs.Moderation{BlockedWords: []string{"one", strings.Repeat("z", i%50+1)}, Action: configs.ModerationMask}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 2000 {
		if got, _ := f.Check("t", "one two"); got != "*** two" {
			t.Fatalf("got %q", got)
		}
	}
	wg.Wait()
}

func BenchmarkFilterCheck(b *testing.B) {
	words := make([]string, 0, 2000)
	for i := range 1000 {
		words = append(words, "word"+strings.Repeat("x", i%20)+string(rune('a'+i%26)), string(rune(0x4e00+i))+"蛋")
	}
	f, err := NewFilter(configs.Moderation{BlockedWords: words, Action: configs.ModerationRefuse})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("A short chat message, 一条普通的消息。", 4)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := f.Check("content.text", text); err != nil {
			b.Fatal(err)
		}
	}
}
