package actions

import (
	"errors"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/domain"
)

func TestEmojiSet(t *testing.T) {
	anyEmoji := newEmojiSet(nil)
	for _, ok := range []string{"👍", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "#️⃣", "❤️", "☕", "🫠"} {
		if err := anyEmoji.check(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a", "ab", "👍👍", "🇯", "\U0001F3FD", "1", "1\u0301", "\xff", strings.Repeat("👍", 2560), "👍\u200d" + strings.Repeat("\u200d👍", 20)} {
		if err := anyEmoji.check(bad); !errors.Is(err, domain.ErrBadEmoji) {
			t.Errorf("%q: %v, want bad_emoji", bad, err)
		}
	}
	list := newEmojiSet([]string{"👍", "❤️"})
	if err := list.check("👍"); err != nil {
		t.Error(err)
	}
	if err := list.check("😀"); !errors.Is(err, domain.ErrBadEmoji) {
		t.Errorf("an emoji outside the allow list: %v", err)
	}
}
