// Package search is message, user and group search: what of a message is
// searchable, the keyword's rules, the indexing stage that fills the
// search table after the save, and the queries, visibility first
// (docs/search.md).
package search

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Keyword lengths, in characters: at least MinKeywordWide when the keyword
// holds a CJK character or an emoji (one such character carries a word),
// else MinKeyword; at most MaxKeyword.
const (
	MinKeywordWide = 2
	MinKeyword     = 3
	MaxKeyword     = 64
)

// Indexed fields: what of a message the search table holds.
const (
	FieldText       = "text"        // 101 text, 106 @-text
	FieldFile       = "file"        // 105 file: its name (an uploaded object's) or URL
	FieldSearchText = "search_text" // 110 custom: content.custom.search_text
)

// DocOf returns the searchable part of m, and false when nothing of it is
// searchable (media without text, notifications, recalled or failed).
func DocOf(m *domain.Message) (store.SearchDoc, bool) {
	if m.Status != domain.StatusNormal && m.Status != "" {
		return store.SearchDoc{}, false
	}
	var field, body string
	switch m.MsgType {
	case domain.MsgText, domain.MsgAtText:
		field, body = FieldText, m.Content.Text
	case domain.MsgFile:
		field, body = FieldFile, fileSearchText(m.Content.File)
	case domain.MsgCustom:
		field, body = FieldSearchText, customSearchText(m.Content.Custom)
	}
	if strings.TrimSpace(body) == "" {
		return store.SearchDoc{}, false
	}
	return store.SearchDoc{ConversationID: m.ConversationID, Seq: m.Seq, SessionType: m.SessionType, SenderID: m.SenderID,
		RecvID: m.RecvID, GroupID: m.GroupID, MsgType: m.MsgType, SendAt: m.SendAt, Field: field, Body: body}, true
}

// fileSearchText is what of a 105's content is searched: an uploaded
// object's name when the content is an object reference (docs/media.md;
// its object_id, sha256 and type are not words anyone searches for), the
// content as it is otherwise (a URL or client-defined text).
func fileSearchText(file string) string {
	if !strings.HasPrefix(strings.TrimSpace(file), "{") {
		return file
	}
	var ref struct {
		Name string `json:"name"`
	}
	if json.Unmarshal([]byte(file), &ref) != nil {
		return ""
	}
	return ref.Name
}

// customSearchText is the string "search_text" at the top of a custom
// message's JSON object: the text its sender chose to make searchable.
func customSearchText(custom string) string {
	if !strings.Contains(custom, `"search_text"`) {
		return ""
	}
	var v struct {
		SearchText string `json:"search_text"`
	}
	if json.Unmarshal([]byte(custom), &v) != nil {
		return ""
	}
	return v.SearchText
}

// CheckKeyword trims keyword and checks its length; the error is a
// bad_request naming field.
func CheckKeyword(field, keyword string) (string, error) {
	k := strings.TrimSpace(keyword)
	n := utf8.RuneCountInString(k)
	if !utf8.ValidString(k) {
		return "", domain.BadField(field, "must be valid UTF-8")
	}
	least := MinKeyword
	if hasWide(k) {
		least = MinKeywordWide
	}
	switch {
	case n < least:
		return "", domain.BadField(field, "must be at least %d characters (%d with a CJK character or an emoji)", MinKeyword, MinKeywordWide)
	case n > MaxKeyword:
		return "", domain.BadField(field, "must be at most %d characters", MaxKeyword)
	}
	return k, nil
}

// hasWide reports a CJK character (Han, kana, Hangul) or a symbol outside
// the Basic Multilingual Plane's letters (emoji).
func hasWide(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
			r >= 0x1F000 || unicode.Is(unicode.So, r) {
			return true
		}
	}
	return false
}

// RangeJSON is one matched range of a highlight, in UTF-16 code units
// (JavaScript's String indexes): text.slice(start, end) is the match.
type RangeJSON struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// HighlightJSON says where the keyword matched: the field of the message
// (text, file, search_text) and the ranges, in order, not overlapping.
// Clients mark them themselves: the server sends no markup.
type HighlightJSON struct {
	Field  string      `json:"field"`
	Ranges []RangeJSON `json:"ranges"`
}

// Highlight finds keyword in body, ignoring case, and returns the ranges.
func Highlight(field, body, keyword string) HighlightJSON {
	h := HighlightJSON{Field: field, Ranges: []RangeJSON{}}
	text, kw := []rune(body), []rune(keyword)
	if len(kw) == 0 {
		return h
	}
	// units[i] is the UTF-16 offset of text[i].
	units := make([]int, len(text)+1)
	for i, r := range text {
		units[i+1] = units[i] + utf16.RuneLen(r)
	}
	for i := 0; i+len(kw) <= len(text); {
		if foldEqual(text[i:i+len(kw)], kw) {
			h.Ranges = append(h.Ranges, RangeJSON{Start: units[i], End: units[i+len(kw)]})
			i += len(kw)
			continue
		}
		i++
	}
	return h
}

func foldEqual(a, b []rune) bool {
	for i := range a {
		if a[i] != b[i] && unicode.ToLower(a[i]) != unicode.ToLower(b[i]) {
			return false
		}
	}
	return true
}
