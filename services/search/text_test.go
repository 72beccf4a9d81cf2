package search_test

import (
	"reflect"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/search"
)

func TestCheckKeyword(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"ab", false}, {"abc", true}, {" abc ", true}, {"天气", true}, {"天", false}, {"🎉x", true},
		{string(make([]byte, 65)), false}, {"a+b", true},
	} {
		_, err := search.CheckKeyword("keyword", tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestHighlightUTF16(t *testing.T) {
	h := search.Highlight("text", "🎉 Hello hello 今天天气", "hello")
	want := []search.RangeJSON{{Start: 3, End: 8}, {Start: 9, End: 14}}
	if !reflect.DeepEqual(h.Ranges, want) || h.Field != "text" {
		t.Fatalf("%+v, want %+v", h, want)
	}
	if h := search.Highlight("text", "今天天气很好", "天气"); !reflect.DeepEqual(h.Ranges, []search.RangeJSON{{Start: 2, End: 4}}) {
		t.Fatalf("%+v", h)
	}
}

func TestDocOf(t *testing.T) {
	custom := domain.Message{MsgType: domain.MsgCustom, Content: domain.Content{Custom: `{"kind":"card","search_text":"order 42"}`}}
	if d, ok := search.DocOf(&custom); !ok || d.Body != "order 42" || d.Field != search.FieldSearchText {
		t.Fatalf("custom: %+v %v", d, ok)
	}
	file := domain.Message{MsgType: domain.MsgFile, Content: domain.Content{File: "report.pdf"}}
	if d, ok := search.DocOf(&file); !ok || d.Field != search.FieldFile {
		t.Fatalf("file: %+v %v", d, ok)
	}
	ref := domain.Message{MsgType: domain.MsgFile, Content: domain.Content{
		File: `{"object_id":"o1","name":"季度报告 Q3.pdf","content_type":"application/pdf","size":10,"sha256":"ab12"}`}}
	if d, ok := search.DocOf(&ref); !ok || d.Body != "季度报告 Q3.pdf" {
		t.Fatalf("object reference: %+v %v, want its name only", d, ok)
	}
	for _, m := range []domain.Message{
		{MsgType: domain.MsgFile, Content: domain.Content{File: `{"object_id":"o2"}`}},
		{MsgType: domain.MsgPicture, Content: domain.Content{Image: "x.png"}},
		{MsgType: domain.MsgCustom, Content: domain.Content{Custom: `{"kind":"card"}`}},
		{MsgType: domain.MsgText, Content: domain.Content{Text: "gone"}, Status: domain.StatusRevoked},
		{MsgType: 1501, Content: domain.Content{Custom: `{"search_text":"x"}`}},
	} {
		if d, ok := search.DocOf(&m); ok {
			t.Errorf("%+v is searchable: %+v", m, d)
		}
	}
}
