package configs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// Limits of the word list: a word longer than MaxBlockedWordRunes is
// surely a mistake, and MaxBlockedWords bounds the automaton's memory
// (about 1 KiB per word of ten characters).
const (
	MaxBlockedWordRunes = 100
	MaxBlockedWords     = 100_000
)

// Words returns the blocked words: moderation.blocked_words, then the
// lines of moderation.blocked_words_file (read now; blank lines and lines
// starting with # skipped), each trimmed of surrounding spaces, duplicates
// kept (the filter folds them). Errors name the key and the offending
// line: a file that cannot be read, a word that is not UTF-8 or longer
// than MaxBlockedWordRunes characters, more than MaxBlockedWords words.
func (m Moderation) Words() ([]string, error) {
	var out []string
	add := func(key, w string) error {
		w = strings.TrimSpace(w)
		switch {
		case !utf8.ValidString(w):
			return errKey{key, fmt.Sprintf("%q is not valid UTF-8", w)}
		case utf8.RuneCountInString(w) > MaxBlockedWordRunes:
			return errKey{key, fmt.Sprintf("%q is longer than %d characters", w, MaxBlockedWordRunes)}
		case len(out) >= MaxBlockedWords:
			return errKey{key, fmt.Sprintf("more than %d words", MaxBlockedWords)}
		}
		if w != "" {
			out = append(out, w)
		}
		return nil
	}
	for i, w := range m.BlockedWords {
		if strings.TrimSpace(w) == "" {
			return nil, errKey{"moderation.blocked_words", fmt.Sprintf("entry %d is empty", i)}
		}
		if err := add("moderation.blocked_words", w); err != nil {
			return nil, err
		}
	}
	if m.BlockedWordsFile == "" {
		return out, nil
	}
	data, err := os.ReadFile(m.BlockedWordsFile)
	if err != nil {
		return nil, errKey{"moderation.blocked_words_file", err.Error()}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if t := strings.TrimSpace(text); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if err := add("moderation.blocked_words_file", text); err != nil {
			e := err.(errKey)
			e.msg = fmt.Sprintf("%s line %d: %s", m.BlockedWordsFile, line, e.msg)
			return nil, e
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errKey{"moderation.blocked_words_file", fmt.Sprintf("%s: %v", m.BlockedWordsFile, err)}
	}
	return out, nil
}
