package actions

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/nexo-im/nexo/domain"
)

// maxEmojiBytes bounds a reaction (message_reactions.emoji is VARCHAR(64)):
// the longest standard emoji sequences (family ZWJ sequences, flags of
// subdivisions) are under 40 bytes.
const maxEmojiBytes = 64

// emojiSet decides which reactions are allowed: the configured list
// (msg.reaction_emojis), or any single emoji when it is empty.
type emojiSet struct {
	allowed map[string]bool // nil: any single emoji
}

func newEmojiSet(list []string) *emojiSet {
	if len(list) == 0 {
		return &emojiSet{}
	}
	s := &emojiSet{allowed: make(map[string]bool, len(list))}
	for _, e := range list {
		s.allowed[e] = true
	}
	return s
}

// check refuses, with bad_emoji, anything but one grapheme cluster (as
// Unicode's text segmentation counts them, github.com/rivo/uniseg) of at
// most 64 bytes that is in the allow list or, without one, is an emoji.
func (s *emojiSet) check(e string) error {
	switch {
	case e == "":
		return domain.NewError(domain.ErrBadEmoji, "emoji is required")
	case len(e) > maxEmojiBytes:
		return domain.NewError(domain.ErrBadEmoji, fmt.Sprintf("emoji is %d bytes; one emoji is at most %d", len(e), maxEmojiBytes))
	case !utf8.ValidString(e):
		return domain.NewError(domain.ErrBadEmoji, "emoji must be valid UTF-8")
	case uniseg.GraphemeClusterCount(e) != 1:
		return domain.NewError(domain.ErrBadEmoji, fmt.Sprintf("emoji must be one character (grapheme cluster); got %d", uniseg.GraphemeClusterCount(e)))
	}
	if s.allowed != nil {
		if !s.allowed[e] {
			return domain.NewError(domain.ErrBadEmoji, "this emoji is not among the server's allowed reactions")
		}
		return nil
	}
	if !isEmoji(e) {
		return domain.NewError(domain.ErrBadEmoji, "not an emoji")
	}
	return nil
}

// isEmoji reports whether the single grapheme cluster c is an emoji: it
// starts with a pictographic code point (the blocks Unicode's
// Extended_Pictographic property covers), is a flag (two regional
// indicators), or a keycap (0-9, # or * with U+20E3).
func isEmoji(c string) bool {
	r, size := utf8.DecodeRuneInString(c)
	rest := c[size:]
	switch {
	case r >= 0x1F1E6 && r <= 0x1F1FF: // regional indicators: a flag is two
		r2, _ := utf8.DecodeRuneInString(rest)
		return r2 >= 0x1F1E6 && r2 <= 0x1F1FF
	case r >= '0' && r <= '9' || r == '#' || r == '*':
		return strings.HasSuffix(rest, "\u20e3")
	}
	return pictographic(r)
}

// pictographic covers the ranges of Unicode 15's Extended_Pictographic.
func pictographic(r rune) bool {
	switch {
	case r == 0x00A9 || r == 0x00AE || r == 0x203C || r == 0x2049 || r == 0x2122 || r == 0x2139:
		return true
	case r >= 0x2194 && r <= 0x21AA, r >= 0x231A && r <= 0x23FF, r == 0x24C2, r >= 0x25AA && r <= 0x25FE:
		return true
	case r >= 0x2600 && r <= 0x27BF, r >= 0x2934 && r <= 0x2935, r >= 0x2B05 && r <= 0x2B55:
		return true
	case r == 0x3030 || r == 0x303D || r == 0x3297 || r == 0x3299:
		return true
	case r >= 0x1F000 && r <= 0x1FAFF:
		return !(r >= 0x1F1E6 && r <= 0x1F1FF) && !(r >= 0x1F3FB && r <= 0x1F3FF) // not a lone indicator or skin tone
	}
	return false
}
