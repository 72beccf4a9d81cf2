package chat

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/nexo-im/nexo/domain"
)

// searchTextKey is the top-level string of a custom message's content that
// search indexes (services/search) and the word filter checks.
const searchTextKey = "search_text"

// filterWords applies the word filter to the text a user wrote in m:
// content.text of 101 and 106, and the top-level "search_text" string of a
// custom message (110), the one part of a custom body that is meant to be
// read as text. Under mask the content is replaced; a masked search_text
// is written back into the object (its other members unchanged, the keys
// in sorted order).
func filterWords(w WordFilter, m *domain.Message) error {
	switch m.MsgType {
	case domain.MsgText, domain.MsgAtText:
		text, err := w.Check("content.text", m.Content.Text)
		if err != nil {
			return err
		}
		m.Content.Text = text
	case domain.MsgCustom:
		custom := m.Content.Custom
		if !strings.HasPrefix(custom, "{") || !strings.Contains(custom, `"`+searchTextKey+`"`) {
			return nil
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(custom), &obj) != nil {
			return nil
		}
		var text string
		if json.Unmarshal(obj[searchTextKey], &text) != nil {
			return nil // absent or not a string: nothing meant as text
		}
		masked, err := w.Check("content.custom.search_text", text)
		if err != nil || masked == text {
			return err
		}
		// Without HTML escaping, so "<" stays "<" as the client wrote it.
		value, err := marshalNoEscape(masked)
		if err != nil {
			return err
		}
		obj[searchTextKey] = value
		out, err := marshalNoEscape(obj)
		if err != nil {
			return err
		}
		m.Content.Custom = string(out)
	}
	return nil
}

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
