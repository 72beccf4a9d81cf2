package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// searchFixture saves messages and indexes them, as the indexing stage does.
type searchFixture struct {
	t      *testing.T
	ctx    context.Context
	db     *store.DB
	msgs   *store.MessageRepo
	search *store.SearchRepo
	n      int
}

func newSearchFixture(t *testing.T, b storetest.Backend) *searchFixture {
	db := b.Open(t)
	ctx := context.Background()
	repo, err := store.NewSearchRepo(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return &searchFixture{t: t, ctx: ctx, db: db, msgs: store.NewMessageRepo(db), search: repo}
}

// add saves and indexes a text message at seq, returning it.
func (f *searchFixture) add(conv string, seq int64, from, to, text string) domain.Message {
	f.t.Helper()
	f.n++
	m := domain.Message{ServerMsgID: fmt.Sprintf("s%d", f.n), ClientMsgID: fmt.Sprintf("c%d", f.n), ConversationID: conv, Seq: seq,
		SenderID: from, MsgType: domain.MsgText, Content: domain.Content{Text: text}, Status: domain.StatusNormal, SendAt: int64(1000 + f.n)}
	if t, _ := domain.ConversationSessionType(conv); t == domain.SessionGroup {
		m.SessionType, m.GroupID = domain.SessionGroup, to
	} else {
		m.SessionType, m.RecvID = domain.SessionSingle, to
	}
	if _, err := f.msgs.SaveBatch(f.ctx, []domain.Message{m}); err != nil {
		f.t.Fatal(err)
	}
	doc := store.SearchDoc{ConversationID: conv, Seq: seq, SessionType: m.SessionType, SenderID: from, RecvID: m.RecvID,
		GroupID: m.GroupID, MsgType: m.MsgType, SendAt: m.SendAt, Field: "text", Body: text}
	// Twice: a redelivered batch changes nothing.
	for range 2 {
		if err := f.search.Index(f.ctx, []store.SearchDoc{doc}); err != nil {
			f.t.Fatal(err)
		}
	}
	return m
}

// find returns the "conv#seq" of user's hits for keyword, newest first.
func (f *searchFixture) find(user, keyword string) []string {
	f.t.Helper()
	hits, err := f.search.Search(f.ctx, store.SearchQuery{UserID: user, Keyword: keyword, Limit: 100})
	if err != nil {
		f.t.Fatalf("search %q by %s: %v", keyword, user, err)
	}
	out := []string{}
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s#%d", h.Message.ConversationID, h.Message.Seq))
	}
	return out
}

// TestSearchLanguages: English words, Chinese, Japanese, mixed text, emoji
// and keywords full of SQL and boolean-mode operators, matched literally,
// on every backend.
func TestSearchLanguages(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newSearchFixture(t, b)
			conv := domain.SingleConversationID("alice", "bob")
			texts := []string{
				"the quick brown fox",             // 1
				"今天天气很好",                          // 2
				"東京は晴れです",                         // 3
				"deploy 明天 release v2",            // 4
				"party tonight 🎉🎉 bring cake",     // 5
				`a+b -c "quoted" x*y 100% done_x`, // 6
				"abc 100 percent doneXx",          // 7: looks like 6 to a pattern, not as text
				"Quick thinking",                  // 8
			}
			for i, s := range texts {
				f.add(conv, int64(i+1), "alice", "bob", s)
			}
			if got, _ := f.search.Indexed(f.ctx); got != int64(len(texts)) {
				t.Fatalf("indexed %d rows, want %d", got, len(texts))
			}
			for _, tc := range []struct {
				keyword string
				want    []int64
			}{
				{"quick", []int64{8, 1}},
				{"brown fox", []int64{1}},
				{"天气", []int64{2}},
				{"天气很好", []int64{2}},
				{"晴れ", []int64{3}},
				{"明天 release", []int64{4}},
				{"🎉🎉 bring", []int64{5}},
				{"a+b", []int64{6}},
				{"-c", []int64{6}},
				{`"quoted"`, []int64{6}},
				{"x*y", []int64{6}},
				{"100%", []int64{6}},
				{"e_x", []int64{6}},
				{"%_%", nil},
				{`"`, []int64{6}},
				{"nothing here", nil},
			} {
				want := []string{}
				for _, s := range tc.want {
					want = append(want, fmt.Sprintf("%s#%d", conv, s))
				}
				for _, user := range []string{"alice", "bob"} {
					if got := f.find(user, tc.keyword); !slices.Equal(got, want) {
						t.Errorf("%s searching %q: %v, want %v", user, tc.keyword, got, want)
					}
				}
			}
			if got := f.find("carol", "quick"); len(got) != 0 {
				t.Errorf("a stranger found %v", got)
			}
		})
	}
}

// TestSearchVisibility is the visibility matrix: each user finds exactly
// what it may see.
func TestSearchVisibility(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newSearchFixture(t, b)
			ctx := f.ctx
			groups := store.NewGroupRepo(f.db)
			gconv := domain.GroupConversationID("g1")
			_, err := groups.Create(ctx, domain.Group{ID: "g1", Name: "team", CreatorUserID: "alice", OwnerUserID: "alice", JoinPolicy: "open"},
				[]domain.GroupMember{{UserID: "alice", RoleLevel: domain.RoleOwner, JoinSeq: 1}, {UserID: "leaver", RoleLevel: domain.RoleMember, JoinSeq: 1}})
			if err != nil {
				t.Fatal(err)
			}
			for seq := int64(1); seq <= 6; seq++ {
				f.add(gconv, seq, "alice", "g1", fmt.Sprintf("weather report %d 天气", seq))
			}
			// late joins at seq 4; leaver leaves with its cap at 3.
			if err := groups.AddMembers(ctx, "g1", []domain.GroupMember{{UserID: "late", RoleLevel: domain.RoleMember, JoinSeq: 4}}); err != nil {
				t.Fatal(err)
			}
			if _, err := groups.Deactivate(ctx, "g1", []string{"leaver"}, domain.MemberLeft); err != nil {
				t.Fatal(err)
			}
			if err := groups.SetCap(ctx, "g1", []string{"leaver"}, 3); err != nil {
				t.Fatal(err)
			}
			// seq 5 is recalled.
			if ok, err := store.NewRevokeRepo(f.db).Revoke(ctx, gconv, 5); err != nil || !ok {
				t.Fatalf("revoke: %v %v", ok, err)
			}
			// A single chat bob deletes after two messages; one more comes.
			sconv := domain.SingleConversationID("alice", "bob")
			f.add(sconv, 1, "alice", "bob", "weather is fine 天气")
			f.add(sconv, 2, "bob", "alice", "weather is bad 天气")
			convs := store.NewConversationRepo(f.db)
			f.db.Gorm.Exec(`INSERT INTO conversations (conversation_id, owner_id, conversation_type, peer_user_id, created_at, updated_at)
				VALUES (?, 'bob', 1, 'alice', 1, 1)`, sconv)
			if err := convs.Hide(ctx, "bob", sconv, 2); err != nil {
				t.Fatal(err)
			}
			f.add(sconv, 3, "alice", "bob", "weather again 天气")

			g := func(seqs ...int64) []string {
				out := []string{}
				for _, s := range seqs {
					out = append(out, fmt.Sprintf("%s#%d", gconv, s))
				}
				return out
			}
			s := func(seqs ...int64) []string {
				out := []string{}
				for _, q := range seqs {
					out = append(out, fmt.Sprintf("%s#%d", sconv, q))
				}
				return out
			}
			for _, tc := range []struct {
				user string
				want []string
			}{
				{"stranger", []string{}},
				{"late", g(6, 4)},                                  // joined at 4; 5 recalled
				{"leaver", g(3, 2, 1)},                             // up to its cap
				{"alice", append(s(3, 2, 1), g(6, 4, 3, 2, 1)...)}, // by send_at: the chat came last
				{"bob", s(3)},                                      // deleted at 2
			} {
				// 天气 is too short for SQLite's trigram index: the scan
				// must apply the same visibility.
				for _, keyword := range []string{"weather", "天气"} {
					if got := f.find(tc.user, keyword); !slices.Equal(got, tc.want) {
						t.Errorf("%s, %s: %v, want %v", tc.user, keyword, got, tc.want)
					}
				}
			}

			// Filters, the newest-first cursor and relevance order.
			hits, err := f.search.Search(ctx, store.SearchQuery{UserID: "alice", Keyword: "weather", ConversationID: gconv, Limit: 2})
			if err != nil || len(hits) != 2 || hits[1].Message.Seq != 4 {
				t.Fatalf("first page: %+v %v", hits, err)
			}
			last := hits[1].Message
			hits, err = f.search.Search(ctx, store.SearchQuery{UserID: "alice", Keyword: "weather", ConversationID: gconv, Limit: 10,
				Before: &store.SearchPosition{SendAt: last.SendAt, ConversationID: last.ConversationID, Seq: last.Seq}})
			if err != nil || len(hits) != 3 || hits[0].Message.Seq != 3 {
				t.Fatalf("second page: %+v %v", hits, err)
			}
			hits, err = f.search.Search(ctx, store.SearchQuery{UserID: "alice", Keyword: "weather", SenderID: "bob", Limit: 10})
			if err != nil || len(hits) != 1 || hits[0].Message.Seq != 2 || hits[0].Body != "weather is bad 天气" || hits[0].Field != "text" {
				t.Fatalf("by sender: %+v %v", hits, err)
			}
			hits, err = f.search.Search(ctx, store.SearchQuery{UserID: "alice", Keyword: "weather", MsgTypes: []domain.MsgType{domain.MsgFile}, Limit: 10})
			if err != nil || len(hits) != 0 {
				t.Fatalf("by type: %+v %v", hits, err)
			}
			hits, err = f.search.Search(ctx, store.SearchQuery{UserID: "alice", Keyword: "weather", Relevance: true, Limit: 3, Offset: 1})
			if err != nil || len(hits) != 3 {
				t.Fatalf("relevance: %+v %v", hits, err)
			}
		})
	}
}
