package routes_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"go.yaml.in/yaml/v3"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/api/apitest"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// seqNotifier stands in for chat.Service.SendSystem: it allocates seqs per
// conversation from a counter, as the real allocator does.
type seqNotifier struct {
	mu   sync.Mutex
	seqs map[string]int64
}

func (n *seqNotifier) SendSystem(_ context.Context, m domain.Message) (chat.AckJSON, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seqs[m.ConversationID]++
	return chat.AckJSON{AckType: "accepted", ConversationID: m.ConversationID, Seq: n.seqs[m.ConversationID]}, nil
}

// httpEnv is the gateway server with the group routes, as cmd wires it,
// over the group service on a fresh database and Redis prefix.
type httpEnv struct {
	t      *testing.T
	db     *store.DB
	repo   *store.GroupRepo
	svc    *group.Service
	srv    *gateway.Server
	issuer *auth.Issuer
}

func newHTTPEnv(t *testing.T, tweak ...func(*configs.Config)) *httpEnv {
	cfg := configs.Default()
	for _, f := range tweak {
		f(&cfg)
	}
	cfg.JWT.Secret = "test-secret-0123456789abcdef0123456789"
	db := storetest.MySQL(t)
	rdb, prefix := storetest.Redis(t)
	keys := store.Keys{Prefix: prefix}
	repo, users := store.NewGroupRepo(db), store.NewUserRepo(db)
	cache := store.NewGroupCache(rdb, keys, cfg.Group.MemberCacheTTL)
	svc := group.NewService(group.Deps{Config: cfg.Group, Groups: repo, Users: users,
		Members: group.NewMembers(repo, cache, cfg.Group, nil, quiet), Locks: cache,
		Notifier: &seqNotifier{seqs: map[string]int64{}}, Log: quiet})
	tokens := store.NewTokens(rdb, keys)
	issuer := must(auth.NewIssuer(cfg.JWT, tokens))(t)
	verifier := must(auth.NewVerifier(cfg.JWT, tokens))(t)
	srv := must(gateway.NewServer(gateway.Deps{HTTP: cfg.HTTP, Logger: quiet, Verifier: verifier}))(t)
	lim := limits.New(rdb, keys.Prefix, nil, quiet)
	r := cfg.Limits.GroupInvite
	invites := limits.NewInvites(lim, limits.Rule{Rate: r.Rate, Period: r.Period, Burst: r.Burst})
	routes.Group(srv, svc, cfg.HTTP.MaxBodyBytes, invites, quiet)
	return &httpEnv{t: t, db: db, repo: repo, svc: svc, srv: srv, issuer: issuer}
}

func (h *httpEnv) addUsers(ids ...string) { storetest.AddUsers(h.t, h.db, ids...) }

func (h *httpEnv) token(t *testing.T, user string) string {
	return must(h.issuer.Issue(context.Background(), user, 5))(t).Token
}

type envelope = apitest.Answer

func (h *httpEnv) do(t *testing.T, method, path, body, token string) envelope {
	t.Helper()
	return apitest.Do(t, h.srv.Hertz().Engine, method, path, body, token)
}

func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var (
	groupKeys  = []string{"avatar", "created_at", "creator_user_id", "group_id", "group_type", "introduction", "invite_permission", "join_policy", "member_count", "name", "owner_user_id", "status", "updated_at"}
	memberKeys = []string{"group_id", "inviter_user_id", "join_seq", "joined_at", "role_level", "status", "user_id"}
)

func TestHTTPRoutes(t *testing.T) {
	t.Parallel()
	h := newHTTPEnv(t)
	h.addUsers("alice", "bob", "carol", "dave")
	alice, bob, dave := h.token(t, "alice"), h.token(t, "bob"), h.token(t, "dave")

	r := h.do(t, "POST", "/group/create", `{"name":"team","member_ids":["bob","carol"],"avatar":"a.png","join_policy":"open"}`, alice)
	if r.Status != 200 || r.ErrCode != 0 || !slices.Equal(keysOf(t, r.Data), groupKeys) {
		t.Fatalf("create: %d %s", r.Status, r.Data)
	}
	var g group.GroupJSON
	_ = json.Unmarshal(r.Data, &g)
	if g.Status != "normal" || g.JoinPolicy != "open" || g.MemberCount != 3 || g.Avatar != "a.png" {
		t.Fatalf("created %+v", g)
	}

	r = h.do(t, "POST", "/group/join", `{"group_id":"`+g.GroupID+`"}`, dave)
	if r.Status != 200 || !slices.Equal(keysOf(t, r.Data), memberKeys) {
		t.Fatalf("join: %d %s", r.Status, r.Data)
	}

	for _, tc := range []struct {
		name, method, path, body, token string
		status, code                    int
		reason                          string
	}{
		{"no token", "POST", "/group/join", `{"group_id":"` + g.GroupID + `"}`, "", 401, 1101, "token_missing"},
		{"unknown field", "POST", "/group/join", `{"group_id":"` + g.GroupID + `","x":1}`, bob, 400, 1001, "bad_request"},
		{"missing group_id", "POST", "/group/quit", `{}`, bob, 400, 1001, "bad_request"},
		{"owner cannot quit", "POST", "/group/quit", `{"group_id":"` + g.GroupID + `"}`, alice, 403, 1207, "owner_cannot_quit"},
		{"member cannot kick", "POST", "/group/kick", `{"group_id":"` + g.GroupID + `","user_ids":["carol"]}`, bob, 403, 1201, "forbidden"},
		{"unknown group", "GET", "/group/info?group_id=nope", "", bob, 404, 1302, "group_not_found"},
		{"unknown invitee", "POST", "/group/invite", `{"group_id":"` + g.GroupID + `","user_ids":["ghost"]}`, bob, 404, 1301, "user_not_found"},
		{"bad role", "POST", "/group/set_role", `{"group_id":"` + g.GroupID + `","user_id":"bob","role_level":100}`, alice, 400, 1001, "bad_request"},
		{"bad limit", "GET", "/group/members?group_id=" + g.GroupID + "&limit=x", "", bob, 400, 1001, "bad_request"},
		{"too few members", "POST", "/group/create", `{"name":"t","member_ids":["bob"]}`, alice, 400, 1001, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(t, tc.method, tc.path, tc.body, tc.token)
			if r.Status != tc.status || r.ErrCode != tc.code || r.ErrMsg != tc.reason {
				t.Fatalf("%d %d %s, want %d %d %s (%s)", r.Status, r.ErrCode, r.ErrMsg, tc.status, tc.code, tc.reason, r.Data)
			}
		})
	}

	for _, tc := range []struct {
		method, path, body, token string
		keys                      []string
	}{
		{"POST", "/group/invite", `{"group_id":"` + g.GroupID + `","user_ids":["bob"]}`, alice, []string{"group_id", "invited", "skipped"}},
		{"POST", "/group/set_role", `{"group_id":"` + g.GroupID + `","user_id":"bob","role_level":60}`, alice, memberKeys},
		{"POST", "/group/kick", `{"group_id":"` + g.GroupID + `","user_ids":["dave"]}`, bob, []string{"group_id", "kicked", "skipped"}},
		{"POST", "/group/update", `{"group_id":"` + g.GroupID + `","join_policy":"invite_only"}`, bob, groupKeys},
		{"GET", "/group/info?group_id=" + g.GroupID, "", dave, groupKeys},
		{"GET", "/group/members?group_id=" + g.GroupID + "&offset=1&limit=1", "", bob, []string{"members", "total"}},
		{"GET", "/group/list", "", bob, []string{"groups", "next_cursor"}},
		{"POST", "/group/transfer", `{"group_id":"` + g.GroupID + `","new_owner_id":"bob"}`, alice, groupKeys},
		{"POST", "/group/quit", `{"group_id":"` + g.GroupID + `"}`, alice, memberKeys},
		{"POST", "/group/dismiss", `{"group_id":"` + g.GroupID + `"}`, bob, groupKeys},
	} {
		r := h.do(t, tc.method, tc.path, tc.body, tc.token)
		if r.Status != 200 || r.ErrCode != 0 || !slices.Equal(keysOf(t, r.Data), tc.keys) {
			t.Fatalf("%s %s: %d %s", tc.method, tc.path, r.Status, r.Data)
		}
	}
	r = h.do(t, "GET", "/group/members?group_id="+g.GroupID+"&offset=1&limit=1", "", bob)
	var page group.MembersPage
	_ = json.Unmarshal(r.Data, &page)
	if page.Total != 2 || len(page.Members) != 1 || page.Members[0].UserID != "carol" {
		t.Fatalf("members page %+v", page)
	}
}

// routeRecorder records the authenticated routes, or with public every
// other one.
type routeRecorder struct {
	public bool
	routes []string
}

func (r *routeRecorder) Route(method, path string, _ app.HandlerFunc, authenticated bool) {
	if authenticated != r.public {
		r.routes = append(r.routes, method+" "+path)
	}
}

// TestOpenAPIDocumentsEveryGroupRoute compares the routes Group mounts
// (all authenticated) with the operations tagged "group" in
// docs/openapi.yaml.
func TestOpenAPIDocumentsEveryGroupRoute(t *testing.T) {
	raw, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Tags     []string         `yaml:"tags"`
			Security []map[string]any `yaml:"security"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, methods := range doc.Paths {
		for method, op := range methods {
			if slices.Contains(op.Tags, "group") {
				documented = append(documented, strings.ToUpper(method)+" "+path)
				if len(op.Security) == 0 {
					t.Errorf("%s %s: no security requirement", method, path)
				}
			}
		}
	}
	rec := &routeRecorder{}
	routes.Group(rec, nil, 0, nil, nil)
	sort.Strings(documented)
	sort.Strings(rec.routes)
	if !slices.Equal(documented, rec.routes) {
		t.Fatalf("docs/openapi.yaml documents %v\nregistered %v", documented, rec.routes)
	}
}

// TestGroupServerAPIRoutes: the server API offers the operations it always
// did, under /api, none behind the token check.
func TestGroupServerAPIRoutes(t *testing.T) {
	rec := &routeRecorder{public: true}
	routes.GroupServerAPI(rec, nil, nil, nil)
	want := []string{"GET /api/group/info", "POST /api/group/ban", "POST /api/group/create", "POST /api/group/dismiss", "POST /api/group/invite",
		"POST /api/group/kick", "POST /api/group/mute", "POST /api/group/mute_member", "POST /api/group/quit", "POST /api/group/set_role",
		"POST /api/group/transfer", "POST /api/group/unban", "POST /api/group/update"}
	sort.Strings(rec.routes)
	if !slices.Equal(rec.routes, want) {
		t.Fatalf("registered %v\nwant %v", rec.routes, want)
	}
}

// TestGroupServerAPIActsAsTheNamedUser: an operation on the server API
// runs as the user its Acting names, under the same rules and answers as
// on the user API.
func TestGroupServerAPIActsAsTheNamedUser(t *testing.T) {
	t.Parallel()
	h := newHTTPEnv(t)
	h.addUsers("alice", "bob", "carol")
	asQuery := func(c *app.RequestContext, dst any) (string, error) {
		return string(c.Query("as")), api.BindJSON(c, 1<<20, dst)
	}
	routes.GroupServerAPI(h.srv, h.svc, asQuery, quiet)

	r := h.do(t, "POST", "/api/group/create?as=alice", `{"name":"team","member_ids":["bob","carol"]}`, "")
	if r.Status != 200 || r.ErrCode != 0 || !slices.Equal(keysOf(t, r.Data), groupKeys) {
		t.Fatalf("create: %d %s", r.Status, r.Data)
	}
	var g group.GroupJSON
	_ = json.Unmarshal(r.Data, &g)
	if g.OwnerUserID != "alice" {
		t.Fatalf("owner %s, want alice", g.OwnerUserID)
	}
	r = h.do(t, "POST", "/api/group/kick?as=bob", `{"group_id":"`+g.GroupID+`","user_ids":["carol"]}`, "")
	if r.Status != 403 || r.ErrMsg != "forbidden" {
		t.Fatalf("kick as a member: %d %s", r.Status, r.ErrMsg)
	}
	r = h.do(t, "POST", "/api/group/quit?as=bob", `{"group_id":"`+g.GroupID+`","x":1}`, "")
	if r.Status != 400 || r.ErrMsg != "bad_request" {
		t.Fatalf("unknown field: %d %s", r.Status, r.ErrMsg)
	}
	r = h.do(t, "GET", "/api/group/info?group_id="+g.GroupID, "", "")
	if r.Status != 200 || !slices.Equal(keysOf(t, r.Data), groupKeys) {
		t.Fatalf("info: %d %s", r.Status, r.Data)
	}
	r = h.do(t, "GET", "/api/group/info", "", "")
	if r.Status != 400 || r.ErrMsg != "bad_request" {
		t.Fatalf("info without group_id: %d %s", r.Status, r.ErrMsg)
	}
}

// TestInviteLimitHTTP: every user one user adds through
// /group/create and /group/invite counts against limits.group_invite
// (shared in Redis); past it the request is too_many_requests with a
// retry-after and nothing is added; more than the burst at once is
// bad_request. The applications routes answer their documented shapes.
func TestInviteLimitHTTP(t *testing.T) {
	t.Parallel()
	h := newHTTPEnv(t, func(c *configs.Config) {
		c.Limits.GroupInvite = configs.Rate{Rate: 4, Period: time.Hour, Burst: 4}
	})
	h.addUsers("alice", "bob", "carol", "dave", "erin", "fred", "gina", "hank")
	alice, bob := h.token(t, "alice"), h.token(t, "bob")

	r := h.do(t, "POST", "/group/create", `{"name":"t","member_ids":["bob","carol","alice"],"join_policy":"approval"}`, alice)
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Data)
	}
	var g group.GroupJSON
	_ = json.Unmarshal(r.Data, &g)
	r = h.do(t, "POST", "/group/invite", `{"group_id":"`+g.GroupID+`","user_ids":["dave","erin","fred"]}`, alice)
	if r.Status != 429 || r.ErrMsg != "too_many_requests" || !strings.Contains(string(r.Data), "retry_after_ms") {
		t.Fatalf("invite past the limit: %d %s %s", r.Status, r.ErrMsg, r.Data)
	}
	if _, err := h.repo.Member(context.Background(), g.GroupID, "dave"); err == nil {
		t.Fatal("a refused invitation added a member")
	}
	r = h.do(t, "POST", "/group/invite", `{"group_id":"`+g.GroupID+`","user_ids":["dave","erin"]}`, alice)
	if r.Status != 200 {
		t.Fatalf("invite within the limit: %d %s %s", r.Status, r.ErrMsg, r.Data)
	}
	// The server API is not limited: the app's backend has decided.
	routes.GroupServerAPI(h.srv, h.svc, func(c *app.RequestContext, dst any) (string, error) {
		return "alice", api.BindJSON(c, 1<<20, dst)
	}, quiet)
	r = h.do(t, "POST", "/api/group/invite", `{"group_id":"`+g.GroupID+`","user_ids":["hank"]}`, "")
	if r.Status != 200 {
		t.Fatalf("server API invite past the user's limit: %d %s %s", r.Status, r.ErrMsg, r.Data)
	}
	// Another user has its own budget; more than the burst at once never passes.
	r = h.do(t, "POST", "/group/invite", `{"group_id":"`+g.GroupID+`","user_ids":["fred","gina","hank","alice","carol"]}`, bob)
	if r.Status != 400 || r.ErrMsg != "bad_request" {
		t.Fatalf("invite above the burst: %d %s %s", r.Status, r.ErrMsg, r.Data)
	}
	r = h.do(t, "POST", "/group/invite", `{"group_id":"`+g.GroupID+`","user_ids":["fred"]}`, bob)
	if r.Status != 200 {
		t.Fatalf("bob's invite: %d %s %s", r.Status, r.ErrMsg, r.Data)
	}

	// The join application round trip over HTTP.
	gina := h.token(t, "gina")
	r = h.do(t, "POST", "/group/join", `{"group_id":"`+g.GroupID+`","req_msg":"hi"}`, gina)
	if r.Status != 200 || !slices.Equal(keysOf(t, r.Data), memberKeys) || !strings.Contains(string(r.Data), `"status":"pending"`) {
		t.Fatalf("join: %d %s", r.Status, r.Data)
	}
	r = h.do(t, "GET", "/group/applications?group_id="+g.GroupID+"&limit=10", "", alice)
	if r.Status != 200 || !slices.Equal(keysOf(t, r.Data), []string{"applications", "next_cursor"}) || !strings.Contains(string(r.Data), `"req_msg":"hi"`) {
		t.Fatalf("applications: %d %s", r.Status, r.Data)
	}
	r = h.do(t, "POST", "/group/application/respond", `{"group_id":"`+g.GroupID+`","user_id":"gina","accept":true}`, alice)
	if r.Status != 200 || !slices.Equal(keysOf(t, r.Data), []string{"application", "member"}) {
		t.Fatalf("respond: %d %s", r.Status, r.Data)
	}
	r = h.do(t, "GET", "/group/list?limit=1", "", bob)
	if r.Status != 200 || !slices.Equal(keysOf(t, r.Data), []string{"groups", "next_cursor"}) {
		t.Fatalf("list: %d %s", r.Status, r.Data)
	}
	r = h.do(t, "GET", "/group/list?limit=x", "", bob)
	if r.Status != 400 {
		t.Fatalf("list with a bad limit: %d %s", r.Status, r.Data)
	}
}
