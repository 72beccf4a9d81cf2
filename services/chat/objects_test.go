package chat

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/domain"
)

func TestMediaRefJSON(t *testing.T) {
	var c ContentJSON
	if err := json.Unmarshal([]byte(`{"image": {"object_id": "o1", "duration_ms": 5}}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.Image != `{"object_id":"o1","duration_ms":5}` || !c.Image.IsObject() {
		t.Fatalf("object ref = %q", c.Image)
	}
	out, _ := json.Marshal(c)
	if string(out) != `{"image":{"object_id":"o1","duration_ms":5}}` {
		t.Fatalf("marshal = %s", out)
	}
	if err := json.Unmarshal([]byte(`{"file": "https://x/y.pdf"}`), &c); err != nil || c.File != "https://x/y.pdf" {
		t.Fatalf("URL ref = %q %v", c.File, err)
	}
	out, _ = json.Marshal(ContentJSON{File: "https://x/y.pdf"})
	if string(out) != `{"file":"https://x/y.pdf"}` {
		t.Fatalf("marshal URL = %s", out)
	}
	for _, bad := range []string{`{"image": "{\"object_id\":\"o1\"}"}`, `{"image": 12}`, `{"image": [1]}`} {
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

type fakeObjects struct{ meta ObjectMeta }

func (f fakeObjects) Attach(_ context.Context, sender, conv string, t domain.MsgType, id string) (ObjectMeta, error) {
	if id != "o1" {
		return ObjectMeta{}, domain.ErrObjectNotFound
	}
	return f.meta, nil
}

func TestAttachObjects(t *testing.T) {
	ctx := context.Background()
	msg := func(ref string) *domain.Message {
		return &domain.Message{SenderID: "a", ConversationID: "si_a_b", MsgType: domain.MsgVoice, Content: domain.Content{Audio: ref}}
	}
	s := &Service{}
	if err := s.attachObjects(ctx, msg(`{"object_id":"o1"}`)); !errors.Is(err, domain.ErrInvalidArgument) {
		t.Fatalf("no object service: %v", err)
	}
	s.objects = fakeObjects{meta: ObjectMeta{Name: strings.Repeat("é", 250) + ".ogg", ContentType: "audio/ogg", Size: 9, SHA256: strings.Repeat("a", 64)}}
	m := msg(`{"object_id":"o1","duration_ms":4200}`)
	if err := s.attachObjects(ctx, m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content.Audio) > maxRefLen {
		t.Fatalf("stored ref is %d bytes", len(m.Content.Audio))
	}
	var ref objectRef
	if err := json.Unmarshal([]byte(m.Content.Audio), &ref); err != nil || ref.ObjectID != "o1" || ref.DurationMs != 4200 ||
		ref.ContentType != "audio/ogg" || !strings.HasSuffix(ref.Name, ".ogg") || ObjectIDOf(m) != "o1" {
		t.Fatalf("ref = %+v (%v)", ref, err)
	}
	for _, bad := range []string{`{"object_id":"o1","url":"http://x"}`, `{"duration_ms":1}`, `{"object_id":"o1","duration_ms":-1}`} {
		if err := s.attachObjects(ctx, msg(bad)); !errors.Is(err, domain.ErrInvalidArgument) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if err := s.attachObjects(ctx, msg(`{"object_id":"o2"}`)); !errors.Is(err, domain.ErrObjectNotFound) {
		t.Fatalf("unknown object: %v", err)
	}
	url := msg("https://cdn/x.ogg")
	if err := s.attachObjects(ctx, url); err != nil || url.Content.Audio != "https://cdn/x.ogg" || ObjectIDOf(url) != "" {
		t.Fatalf("URL ref changed: %q %v", url.Content.Audio, err)
	}
}
