package actions

import (
	"context"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// Annotator is chat.Annotator over the actions' storage: three queries at
// most per pulled page (hidden seqs, reactions, quoted messages' state).
type Annotator struct {
	store    Store
	messages Messages
}

// NewAnnotator returns the pull annotations.
func NewAnnotator(st Store, messages Messages) *Annotator {
	return &Annotator{store: st, messages: messages}
}

var _ chat.Annotator = (*Annotator)(nil)

// Annotate implements chat.Annotator: a message viewer deleted for itself
// becomes {seq, status: "deleted"}; readable messages get their reactions
// ([{emoji, count, me}]); a quote of a message since recalled, deleted (or
// deleted by viewer for itself) becomes {seq, status: "unavailable"}.
func (a *Annotator) Annotate(ctx context.Context, viewer, conv string, msgs []chat.MessageJSON) error {
	var seqs, quoted []int64
	for i := range msgs {
		m := &msgs[i]
		if m.Status == string(domain.StatusUnavailable) {
			continue
		}
		seqs = append(seqs, m.Seq)
		if m.Quote != nil && m.Quote.Status == string(domain.StatusNormal) {
			quoted = append(quoted, m.Quote.Seq)
		}
	}
	if len(seqs) == 0 {
		return nil
	}
	hidden, err := a.store.Hidden(ctx, viewer, conv, append(append([]int64(nil), seqs...), quoted...))
	if err != nil {
		return err
	}
	var normal []int64
	for i := range msgs {
		m := &msgs[i]
		if m.Status == string(domain.StatusUnavailable) {
			continue
		}
		if hidden[m.Seq] {
			*m = chat.MessageJSON{Seq: m.Seq, Status: string(domain.StatusDeleted)}
			continue
		}
		if m.Status == string(domain.StatusNormal) {
			normal = append(normal, m.Seq)
		}
	}
	reactions, err := a.store.Reactions(ctx, conv, normal, viewer)
	if err != nil {
		return err
	}
	gone := map[int64]bool{}
	if len(quoted) > 0 {
		got, err := a.messages.BySeqs(ctx, conv, quoted)
		if err != nil {
			return err
		}
		for _, q := range got {
			if q.Status != domain.StatusNormal {
				gone[q.Seq] = true
			}
		}
	}
	for i := range msgs {
		m := &msgs[i]
		for _, r := range reactions[m.Seq] {
			m.Reactions = append(m.Reactions, chat.ReactionJSON{Emoji: r.Emoji, Count: r.Count, Me: r.Me})
		}
		if q := m.Quote; q != nil && m.Status == string(domain.StatusNormal) && (gone[q.Seq] || hidden[q.Seq]) {
			m.Quote = &chat.QuoteJSON{Seq: q.Seq, Status: string(domain.StatusUnavailable)}
		}
	}
	return nil
}
