package chat

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// upperWords is a fake word filter: "bad" is refused, "meh" masked.
type upperWords struct{ calls []string }

func (u *upperWords) Check(field, s string) (string, error) {
	u.calls = append(u.calls, field)
	if strings.Contains(s, "bad") {
		return s, domain.NewError(domain.ErrBlockedWord, field+" contains a word this server does not allow")
	}
	return strings.ReplaceAll(s, "meh", "***"), nil
}

// TestFilterWordsFields: the filter sees content.text of 101 and 106 and
// a custom message's top-level search_text string, nothing else; a masked
// search_text is written back without HTML escaping and the other members
// are kept.
func TestFilterWordsFields(t *testing.T) {
	w := &upperWords{}
	for _, tc := range []struct {
		name  string
		m     domain.Message
		field string // "" when the filter must not be asked
		want  domain.Content
	}{
		{"text", domain.Message{MsgType: domain.MsgText, Content: domain.Content{Text: "so meh"}}, "content.text", domain.Content{Text: "so ***"}},
		{"at text", domain.Message{MsgType: domain.MsgAtText, Content: domain.Content{Text: "meh"}}, "content.text", domain.Content{Text: "***"}},
		{"custom", domain.Message{MsgType: domain.MsgCustom, Content: domain.Content{Custom: `{"search_text":"<meh>","z":[1,2],"a":{"search_text":"meh"}}`}},
			"content.custom.search_text", domain.Content{Custom: `{"a":{"search_text":"meh"},"search_text":"<***>","z":[1,2]}`}},
		{"custom clean", domain.Message{MsgType: domain.MsgCustom, Content: domain.Content{Custom: `{"search_text":"fine","z":1}`}},
			"content.custom.search_text", domain.Content{Custom: `{"search_text":"fine","z":1}`}},
		{"custom, search_text not a string", domain.Message{MsgType: domain.MsgCustom, Content: domain.Content{Custom: `{"search_text":["meh"]}`}},
			"", domain.Content{Custom: `{"search_text":["meh"]}`}},
		{"custom array", domain.Message{MsgType: domain.MsgCustom, Content: domain.Content{Custom: `["search_text","meh"]`}}, "", domain.Content{Custom: `["search_text","meh"]`}},
		{"image", domain.Message{MsgType: domain.MsgPicture, Content: domain.Content{Image: "meh.png"}}, "", domain.Content{Image: "meh.png"}},
	} {
		w.calls = nil
		m := tc.m
		if err := filterWords(w, &m); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if m.Content != tc.want {
			t.Errorf("%s: content %+v, want %+v", tc.name, m.Content, tc.want)
		}
		if got := strings.Join(w.calls, ","); got != tc.field {
			t.Errorf("%s: asked for %q, want %q", tc.name, got, tc.field)
		}
	}
	m := domain.Message{MsgType: domain.MsgCustom, Content: domain.Content{Custom: `{"search_text":"bad"}`}}
	if err := filterWords(w, &m); !errors.Is(err, domain.ErrBlockedWord) {
		t.Fatalf("refused search_text: %v", err)
	}
}

// TestSendFiltersUserSendsOnly: a user's send is refused by the filter
// before anything is allocated; the server API's (Origin.App) is not
// filtered.
func TestSendFiltersUserSendsOnly(t *testing.T) {
	w := &upperWords{}
	s := NewService(Deps{Mode: NewMode(configs.TwoPhase{Enabled: true}), Msg: configs.Default().Msg, Accepter: freshAccepter{},
		Saver: savedBefore{}, Users: everyone{}, Fanout: noFanout{}, Log: slog.New(slog.DiscardHandler), Words: w})
	req := SendRequest{ClientMsgID: "c1", SessionType: int(domain.SessionSingle), RecvID: "bob", MsgType: int(domain.MsgText), Content: ContentJSON{Text: "bad"}}
	if _, err := s.Send(context.Background(), Origin{UserID: "alice"}, req); !errors.Is(err, domain.ErrBlockedWord) {
		t.Fatalf("user send: %v", err)
	}
	if _, err := s.Send(context.Background(), Origin{UserID: "alice", App: true}, req); err != nil {
		t.Fatalf("the app's send: %v", err)
	}
	if len(w.calls) != 1 {
		t.Fatalf("filter asked %d times, want 1 (the user's send only)", len(w.calls))
	}
}
