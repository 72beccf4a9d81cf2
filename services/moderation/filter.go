// Package moderation holds the operator's tools against abuse that are not
// a person's own choice: the word filter (Filter) applied to what users
// write, and message reports (Reports) that users file and the app's
// backend resolves. docs/moderation.md describes both.
package moderation

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/coregx/ahocorasick"
	"golang.org/x/text/cases"
	"golang.org/x/text/width"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// MaskRune replaces each matched character under moderation.action mask.
const MaskRune = '*'

// Filter matches text against the blocked words (moderation.blocked_words
// and blocked_words_file) with one Aho–Corasick automaton over the folded
// words. Matching is by substring, after folding the text and the words
// alike: full-width forms to their ASCII or half-width kin and half-width
// katakana to full width (golang.org/x/text/width), then Unicode case
// folding (golang.org/x/text/cases), so "ＢＡＤ", "Bad" and "bad" are one
// word. Safe for concurrent use; Reload swaps the automaton atomically.
type Filter struct {
	cur atomic.Pointer[matcher]
}

// matcher is one compiled configuration; immutable once built.
type matcher struct {
	ac    *ahocorasick.Automaton // nil: no words
	mask  bool
	words int
}

// NewFilter compiles cfg's words (configs.Moderation.Words reads the file).
func NewFilter(cfg configs.Moderation) (*Filter, error) {
	f := &Filter{}
	if err := f.Reload(cfg); err != nil {
		return nil, err
	}
	return f, nil
}

// Reload compiles cfg and, only when that succeeds, replaces the words and
// the action in force: a file that cannot be read leaves the old ones.
// Texts checked while it runs see either the old or the new list.
func (f *Filter) Reload(cfg configs.Moderation) error {
	words, err := cfg.Words()
	if err != nil {
		return err
	}
	m := &matcher{mask: cfg.Action == configs.ModerationMask}
	folded := make([]string, 0, len(words))
	seen := make(map[string]bool, len(words))
	for _, w := range words {
		fw := string(fold(w, nil))
		if fw != "" && !seen[fw] {
			seen[fw] = true
			folded = append(folded, fw)
		}
	}
	if len(folded) > 0 {
		ac, err := ahocorasick.NewBuilder().AddStrings(folded).Build()
		if err != nil {
			return fmt.Errorf("moderation.blocked_words: build the matcher: %w", err)
		}
		m.ac, m.words = ac, len(folded)
	}
	f.cur.Store(m)
	return nil
}

// Words is how many distinct folded words are in force.
func (f *Filter) Words() int {
	if f == nil {
		return 0
	}
	return f.cur.Load().words
}

// Mask reports whether the action in force is mask.
func (f *Filter) Mask() bool { return f != nil && f.cur.Load().mask }

// Check applies the filter to s, the value of field (named in the error,
// e.g. "content.text" or "nickname"). Nothing matched: s, nil. A match
// under refuse: a domain.ErrBlockedWord error naming field but not the
// word (telling it would help writing around it). A match under mask: s
// with every character that took part in a match replaced by MaskRune,
// same number of characters, nil. A nil Filter passes everything.
func (f *Filter) Check(field, s string) (string, error) {
	if f == nil || s == "" {
		return s, nil
	}
	m := f.cur.Load()
	if m.ac == nil {
		return s, nil
	}
	// Only a mask needs each folded byte's rune of origin.
	var origin []int32
	track := (*[]int32)(nil)
	if m.mask {
		origin = make([]int32, 0, len(s))
		track = &origin
	}
	folded := fold(s, track)
	if !m.ac.IsMatch(folded) {
		return s, nil
	}
	if !m.mask {
		return s, domain.NewError(domain.ErrBlockedWord, field+" contains a word this server does not allow")
	}
	return maskRunes(s, m.ac, folded, origin), nil
}

// maskRunes replaces in s each rune that produced a byte of a match in
// folded. All matches count, overlapping ones too (FindAllOverlapping), so
// "ab" and "bc" both mask all of "abc". (Find with leftmost-longest
// semantics is not used: in v0.3.1 it can return a later match than the
// leftmost one.)
func maskRunes(s string, ac *ahocorasick.Automaton, folded []byte, origin []int32) string {
	hit := make([]bool, utf8.RuneCountInString(s))
	for _, mt := range ac.FindAllOverlapping(folded) {
		for i := mt.Start; i < mt.End; i++ {
			hit[origin[i]] = true
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	i := 0
	for _, r := range s {
		if hit[i] {
			r = MaskRune
		}
		b.WriteRune(r)
		i++
	}
	return b.String()
}

// caser folds case; cases.Fold's Caser is stateless and safe to share.
var caser = cases.Fold()

// fold returns s width-folded and case-folded, one rune at a time so each
// output byte can be traced to the rune of s it came from: when origin is
// not nil, (*origin)[i] is the index (in runes) of the rune of s that
// produced byte i. Folding one rune may yield several ("ß" folds to "ss");
// a rune with no case skips the caser (every CJK ideograph), ASCII takes
// a fast path.
func fold(s string, origin *[]int32) []byte {
	out := make([]byte, 0, len(s))
	var idx int32
	for _, r := range s {
		n := len(out)
		switch {
		case r < utf8.RuneSelf:
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			out = append(out, byte(r))
		case r >= 0x3400 && r <= 0x9FFF:
			// CJK ideographs: no width variant, no case.
			out = utf8.AppendRune(out, r)
		default:
			if w := width.LookupRune(r).Folded(); w != 0 {
				r = w
			}
			switch {
			case r < utf8.RuneSelf:
				out = append(out, byte(unicode.ToLower(r)))
			case unicode.SimpleFold(r) == r:
				out = utf8.AppendRune(out, r)
			default:
				out = append(out, caser.String(string(r))...)
			}
		}
		if origin != nil {
			for range len(out) - n {
				*origin = append(*origin, idx)
			}
		}
		idx++
	}
	return out
}
