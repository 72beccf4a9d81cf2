package web

import (
	"bytes"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/ut"
)

// router records routes and mounts them on a Hertz server.
type router struct {
	h      *server.Hertz
	routes []string
	authed []string
}

func (r *router) Route(method, path string, h app.HandlerFunc, authenticated bool) {
	r.routes = append(r.routes, method+" "+path)
	if authenticated {
		r.authed = append(r.authed, path)
	}
	r.h.Handle(method, path, h)
}

func newRouter(t *testing.T) *router {
	t.Helper()
	r := &router{h: server.New(server.WithDisablePrintRoute(true))}
	Register(r)
	return r
}

func TestRegisterServesEveryFileUnauthenticated(t *testing.T) {
	r := newRouter(t)
	if len(r.authed) > 0 {
		t.Errorf("authenticated routes %v: the page must load before anyone signs in", r.authed)
	}
	want := Routes()
	got := slices.Clone(r.routes)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("registered %v, Routes() says %v", got, want)
	}
	for _, must := range []string{"GET /", "GET /assets/main.js", "GET /assets/app.css"} {
		if !slices.Contains(r.routes, must) {
			t.Errorf("%s is not registered (have %v)", must, r.routes)
		}
	}
}

func TestAssetsAnswerWithTypeCachingAndPolicy(t *testing.T) {
	r := newRouter(t)
	tests := []struct {
		path, contentType, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/assets/main.js">`},
		{"/assets/main.js", "text/javascript; charset=utf-8", "import"},
		{"/assets/client.js", "text/javascript; charset=utf-8", "export class Client"},
		{"/assets/app.css", "text/css; charset=utf-8", ":root"},
		{"/assets/sdk/index.js", "text/javascript; charset=utf-8", "export { NexoClient"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			res := ut.PerformRequest(r.h.Engine, "GET", tc.path, nil).Result()
			if res.StatusCode() != 200 {
				t.Fatalf("status %d", res.StatusCode())
			}
			if ct := string(res.Header.ContentType()); ct != tc.contentType {
				t.Errorf("Content-Type %q, want %q", ct, tc.contentType)
			}
			if !strings.Contains(string(res.Body()), tc.contains) {
				t.Errorf("body lacks %q", tc.contains)
			}
			for h, want := range map[string]string{
				"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": contentSecurityPolicy,
			} {
				if got := string(res.Header.Peek(h)); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
			etag := string(res.Header.Peek("ETag"))
			if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
				t.Fatalf("ETag %q", etag)
			}
			again := ut.PerformRequest(r.h.Engine, "GET", tc.path, nil, ut.Header{Key: "If-None-Match", Value: etag}).Result()
			if again.StatusCode() != 304 || len(again.Body()) != 0 {
				t.Errorf("revalidation: status %d with %d bytes, want 304 and no body", again.StatusCode(), len(again.Body()))
			}
			stale := ut.PerformRequest(r.h.Engine, "GET", tc.path, nil, ut.Header{Key: "If-None-Match", Value: `"0000000000000000"`}).Result()
			if stale.StatusCode() != 200 {
				t.Errorf("stale ETag: status %d, want 200", stale.StatusCode())
			}
		})
	}
}

// TestNoExternalRequests: the client references nothing outside its own
// origin (no CDN, no web font, no absolute URL), and every module it
// imports is embedded.
func TestNoExternalRequests(t *testing.T) {
	root, err := fs.Sub(static, "static")
	if err != nil {
		t.Fatal(err)
	}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(\s*['"]?(https?:|//)`)
	imports := regexp.MustCompile(`from '\./([a-z]+\.js)'`)
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		if m := external.Find(body); m != nil {
			t.Errorf("%s references %q: the client must not leave its origin", name, m)
		}
		for _, m := range imports.FindAllSubmatch(body, -1) {
			if _, err := fs.Stat(root, string(m[1])); err != nil {
				t.Errorf("%s imports %s, which is not embedded", name, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestServesTheSDKAsIs: every module of sdk/js/src is served at
// /assets/sdk/{file} with the bytes on disk (the embed is the source, not
// a copy that could go stale).
func TestServesTheSDKAsIs(t *testing.T) {
	r := newRouter(t)
	files, err := os.ReadDir("../sdk/js/src")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("sdk/js/src is empty")
	}
	for _, f := range files {
		want, err := os.ReadFile("../sdk/js/src/" + f.Name())
		if err != nil {
			t.Fatal(err)
		}
		res := ut.PerformRequest(r.h.Engine, "GET", AssetPrefix+sdkDir+f.Name(), nil).Result()
		if res.StatusCode() != 200 || !bytes.Equal(res.Body(), want) {
			t.Errorf("%s%s%s: status %d, %d bytes; want 200 and the %d bytes of sdk/js/src/%s", AssetPrefix, sdkDir, f.Name(), res.StatusCode(), len(res.Body()), len(want), f.Name())
		}
	}
}
