package chat

import (
	"fmt"
	"unicode/utf8"
)

// What the message store refuses, checked at accept so a message it would
// refuse is answered bad_request (or body_too_long) before a seq is issued
// instead of being accepted, retried and dead-lettered. The
// rules are MariaDB's, measured on 10.11 with JSON_VALID, the check behind
// its JSON columns; they are applied on every backend (SQLite stores any
// text), so what one backend accepts another does too and every client's
// JSON decoder can read what it pulls.
const (
	// MaxCustomDepth is the deepest nesting of arrays and objects
	// content.custom may have: MariaDB refuses 32 levels and more.
	MaxCustomDepth = 31
	// maxTextBytes is the capacity of messages.content_text (TEXT).
	maxTextBytes = 65535
)

// checkStorableJSON reports why the database would refuse js (already
// checked by json.Valid) in a JSON column, or "" when it would store it:
// nesting deeper than MaxCustomDepth, bytes that are not UTF-8, or a
// \u escape of a lone UTF-16 surrogate ("\ud800" alone, or a low surrogate
// without its high half).
func checkStorableJSON(js []byte) string {
	if !utf8.Valid(js) {
		return "must be valid UTF-8"
	}
	depth := 0
	inString := false
	for i := 0; i < len(js); i++ {
		b := js[i]
		if !inString {
			switch b {
			case '"':
				inString = true
			case '[', '{':
				depth++
				if depth > MaxCustomDepth {
					return fmt.Sprintf("must nest at most %d levels of arrays and objects", MaxCustomDepth)
				}
			case ']', '}':
				depth--
			}
			continue
		}
		switch b {
		case '"':
			inString = false
		case '\\':
			if i+1 < len(js) && js[i+1] == 'u' {
				r, ok := hex4(js, i+2)
				if !ok {
					return "has a malformed \\u escape"
				}
				switch {
				case r >= 0xD800 && r <= 0xDBFF:
					// A high surrogate must be followed by \u and a low one.
					lo, ok := rune(0), false
					if i+7 < len(js) && js[i+6] == '\\' && js[i+7] == 'u' {
						lo, ok = hex4(js, i+8)
					}
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return "has a lone UTF-16 surrogate escape (\\ud800–\\udbff without a low half)"
					}
					i += 11
					continue
				case r >= 0xDC00 && r <= 0xDFFF:
					return "has a lone UTF-16 surrogate escape (\\udc00–\\udfff without a high half)"
				}
				i += 5
				continue
			}
			i++ // the escaped character
		}
	}
	return ""
}

// hex4 reads four hex digits at js[i:].
func hex4(js []byte, i int) (rune, bool) {
	if i+4 > len(js) {
		return 0, false
	}
	var r rune
	for _, b := range js[i : i+4] {
		switch {
		case b >= '0' && b <= '9':
			r = r<<4 | rune(b-'0')
		case b >= 'a' && b <= 'f':
			r = r<<4 | rune(b-'a'+10)
		case b >= 'A' && b <= 'F':
			r = r<<4 | rune(b-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
