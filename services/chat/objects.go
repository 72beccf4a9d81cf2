package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"unicode/utf8"

	"github.com/nexo-im/nexo/domain"
)

// MediaRef is the value of content.image, .audio, .video and .file: as
// before, a URL (or any client reference) as a JSON string, or an object
// reference, a JSON object {"object_id": "…"} with client fields such as
// duration_ms. Stored as text: a reference starts with "{", so a string
// starting with "{" is refused. Pushes and pulls carry a reference with the
// object's metadata (name, content_type, size, sha256, width, height,
// has_thumbnail) and never a URL: GET /object/url gives one.
type MediaRef string

// IsObject reports whether r is an object reference.
func (r MediaRef) IsObject() bool { return len(r) > 0 && r[0] == '{' }

// MarshalJSON writes a URL as a string and an object reference as is.
func (r MediaRef) MarshalJSON() ([]byte, error) {
	if r.IsObject() {
		return []byte(r), nil
	}
	return json.Marshal(string(r))
}

// UnmarshalJSON reads a string or an object (compacted).
func (r *MediaRef) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if len(s) > 0 && s[0] == '{' {
			return errors.New("a URL string must not start with {; send an object reference as a JSON object")
		}
		*r = MediaRef(s)
	case len(b) > 0 && b[0] == '{':
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return err
		}
		*r = MediaRef(buf.String())
	case string(b) == "null":
		*r = ""
	default:
		return errors.New("must be a URL string or an object reference {\"object_id\": …}")
	}
	return nil
}

// ObjectMeta is what a message carries of an object.
type ObjectMeta struct {
	Name         string `json:"name"`
	ContentType  string `json:"content_type"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	Width        int    `json:"width,omitempty"`
	Height       int    `json:"height,omitempty"`
	HasThumbnail bool   `json:"has_thumbnail"`
}

// Objects checks the objects a message carries (media.Service).
type Objects interface {
	// Attach checks that sender may send objectID in a msgType message of
	// conversationID — it exists, is complete, is the sender's or already
	// carried by a message of that conversation, and its sniffed type fits
	// msgType — and returns its metadata. Errors: object_not_found,
	// object_incomplete, object_access_denied, object_type_mismatch.
	Attach(ctx context.Context, sender, conversationID string, msgType domain.MsgType, objectID string) (ObjectMeta, error)
}

// objectRef is a stored object reference: the client's fields and the
// object's metadata.
type objectRef struct {
	ObjectID   string `json:"object_id"`
	DurationMs int64  `json:"duration_ms,omitempty"`
	ObjectMeta
}

// clientRef is what a client may put in an object reference.
type clientRef struct {
	ObjectID   string `json:"object_id"`
	DurationMs int64  `json:"duration_ms"`
}

// mediaField returns the content field msg type t carries a media
// reference in, and its name ("" for text and custom types).
func mediaField(t domain.MsgType, c *domain.Content) (*string, string) {
	switch t {
	case domain.MsgPicture:
		return &c.Image, "image"
	case domain.MsgVoice:
		return &c.Audio, "audio"
	case domain.MsgVideo:
		return &c.Video, "video"
	case domain.MsgFile:
		return &c.File, "file"
	}
	return nil, ""
}

// attachObjects replaces an object reference of m (as the client or
// before_send left it) with the checked reference and the object's
// metadata. A URL string is left as it is.
func (s *Service) attachObjects(ctx context.Context, m *domain.Message) error {
	field, name := mediaField(m.MsgType, &m.Content)
	if field == nil || !MediaRef(*field).IsObject() {
		return nil
	}
	fieldName := "content." + name
	dec := json.NewDecoder(bytes.NewReader([]byte(*field)))
	dec.DisallowUnknownFields()
	var in clientRef
	if err := dec.Decode(&in); err != nil {
		return domain.BadField(fieldName, "must be {\"object_id\": \"…\"} with optional duration_ms (%v)", err)
	}
	if in.ObjectID == "" {
		return domain.BadField(fieldName+".object_id", "is required")
	}
	if in.DurationMs < 0 {
		return domain.BadField(fieldName+".duration_ms", "must be >= 0 (milliseconds)")
	}
	if s.objects == nil {
		return domain.BadField(fieldName, "object references need uploads, which this server does not serve (objects.backend)")
	}
	meta, err := s.objects.Attach(ctx, m.SenderID, m.ConversationID, m.MsgType, in.ObjectID)
	if err != nil {
		return err
	}
	ref := objectRef{ObjectID: in.ObjectID, DurationMs: in.DurationMs, ObjectMeta: meta}
	b, err := fitRef(ref)
	if err != nil {
		return err
	}
	*field = string(b)
	return nil
}

// fitRef encodes ref within maxRefLen bytes, shortening the name (keeping
// its extension) when the whole would not fit.
func fitRef(ref objectRef) ([]byte, error) {
	for {
		b, err := json.Marshal(ref)
		if err != nil {
			return nil, err
		}
		if len(b) <= maxRefLen {
			return b, nil
		}
		ext := path.Ext(ref.Name)
		base := []rune(ref.Name[:len(ref.Name)-len(ext)])
		if len(base) == 0 {
			if ref.Name == "" {
				return nil, fmt.Errorf("object reference of %d bytes", len(b))
			}
			ref.Name = ""
			continue
		}
		cut := max(1, min(len(base)/4, (len(b)-maxRefLen+3)/2))
		if cut >= len(base) {
			base = nil
		} else {
			base = base[:len(base)-cut]
		}
		if len(base) > 0 {
			ref.Name = string(base) + "…" + ext
		} else {
			ref.Name = ext
		}
		if !utf8.ValidString(ref.Name) {
			ref.Name = ""
		}
	}
}

// ObjectIDOf returns the object a message carries ("" for none): the
// object_id of its media field's reference.
func ObjectIDOf(m *domain.Message) string {
	c := m.Content
	field, _ := mediaField(m.MsgType, &c)
	if field == nil || !MediaRef(*field).IsObject() {
		return ""
	}
	var ref clientRef
	if json.Unmarshal([]byte(*field), &ref) != nil {
		return ""
	}
	return ref.ObjectID
}
