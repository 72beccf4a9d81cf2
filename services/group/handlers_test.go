package group_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/common/hlog"
	"github.com/cloudwego/hertz/pkg/common/ut"
	"go.yaml.in/yaml/v3"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/store"
)

func TestMain(m *testing.M) {
	// Hertz's logger is process-wide; set it once, before any server.
	hlog.SetLogger(gateway.HertzLogger(slog.New(slog.DiscardHandler)))
	os.Exit(m.Run())
}

// httpEnv is the gateway server with the group routes, as cmd wires it.
type httpEnv struct {
	*env
	srv    *gateway.Server
	issuer *auth.Issuer
}

func newHTTPEnv(t *testing.T, tweak ...func(*configs.Config)) *httpEnv {
	e := newEnv(t, tweak...)
	e.cfg.JWT.Secret = "test-secret-0123456789abcdef0123456789"
	tokens := store.NewTokens(e.rdb, e.keys)
	issuer := must(auth.NewIssuer(e.cfg.JWT, tokens))(t)
	verifier := must(auth.NewVerifier(e.cfg.JWT, tokens))(t)
	srv := must(gateway.NewServer(gateway.Deps{HTTP: e.cfg.HTTP, Logger: quiet, Verifier: verifier}))(t)
	lim := limits.New(e.rdb, e.keys.Prefix, nil, quiet)
	r := e.cfg.Limits.GroupInvite
	invites := limits.NewInvites(lim, limits.Rule{Rate: r.Rate, Period: r.Period, Burst: r.Burst})
	group.NewHandlers(e.svc, e.cfg.HTTP.MaxBodyBytes, invites, quiet).Register(srv)
	return &httpEnv{env: e, srv: srv, issuer: issuer}
}

func (h *httpEnv) token(t *testing.T, user string) string {
	return must(h.issuer.Issue(bg, user, 5))(t).Token
}

type envelope struct {
	status  int
	ErrCode int             `json:"err_code"`
	ErrMsg  string          `json:"err_msg"`
	Data    json.RawMessage `json:"data"`
}

func (h *httpEnv) do(t *testing.T, method, path, body, token string) envelope {
	t.Helper()
	var headers []ut.Header
	if token != "" {
		headers = append(headers, ut.Header{Key: "Authorization", Value: "Bearer " + token})
	}
	var b *ut.Body
	if body != "" {
		headers = append(headers, ut.Header{Key: "Content-Type", Value: "application/json"})
		b = &ut.Body{Body: strings.NewReader(body), Len: len(body)}
	}
	res := ut.PerformRequest(h.srv.Hertz().Engine, method, path, b, headers...).Result()
	out := envelope{status: res.StatusCode()}
	if err := json.Unmarshal(res.Body(), &out); err != nil {
		t.Fatalf("%s %s: %q is not an envelope", method, path, res.Body())
	}
	return out
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
	if r.status != 200 || r.ErrCode != 0 || !slices.Equal(keysOf(t, r.Data), groupKeys) {
		t.Fatalf("create: %d %s", r.status, r.Data)
	}
	var g group.GroupJSON
	_ = json.Unmarshal(r.Data, &g)
	if g.Status != "normal" || g.JoinPolicy != "open" || g.MemberCount != 3 || g.Avatar != "a.png" {
		t.Fatalf("created %+v", g)
	}

	r = h.do(t, "POST", "/group/join", `{"group_id":"`+g.GroupID+`"}`, dave)
	if r.status != 200 || !slices.Equal(keysOf(t, r.Data), memberKeys) {
		t.Fatalf("join: %d %s", r.status, r.Data)
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
			if r.status != tc.status || r.ErrCode != tc.code || r.ErrMsg != tc.reason {
				t.Fatalf("%d %d %s, want %d %d %s (%s)", r.status, r.ErrCode, r.ErrMsg, tc.status, tc.code, tc.reason, r.Data)
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
		if r.status != 200 || r.ErrCode != 0 || !slices.Equal(keysOf(t, r.Data), tc.keys) {
			t.Fatalf("%s %s: %d %s", tc.method, tc.path, r.status, r.Data)
		}
	}
	r = h.do(t, "GET", "/group/members?group_id="+g.GroupID+"&offset=1&limit=1", "", bob)
	var page group.MembersPage
	_ = json.Unmarshal(r.Data, &page)
	if page.Total != 2 || len(page.Members) != 1 || page.Members[0].UserID != "carol" {
		t.Fatalf("members page %+v", page)
	}
}

type routeRecorder struct{ routes []string }

func (r *routeRecorder) Route(method, path string, _ app.HandlerFunc, authenticated bool) {
	if authenticated {
		r.routes = append(r.routes, method+" "+path)
	}
}

// TestOpenAPIDocumentsEveryGroupRoute compares the routes Register mounts
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
	(&group.Handlers{}).Register(rec)
	sort.Strings(documented)
	sort.Strings(rec.routes)
	if !slices.Equal(documented, rec.routes) {
		t.Fatalf("docs/openapi.yaml documents %v\nregistered %v", documented, rec.routes)
	}
}
