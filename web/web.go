// Package web is Nexo's browser chat client: plain HTML, CSS and JavaScript
// modules embedded in the binary (no build step) and served by the gateway
// at GET / and GET /assets/{file}. The client speaks only the public API
// (docs/openapi.yaml) and the WebSocket protocol (docs/protocol.md);
// docs/web.md describes what it does and how it is tested.
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"sort"

	"github.com/cloudwego/hertz/pkg/app"

	sdkjs "github.com/nexo-im/nexo/sdk/js"
)

//go:embed static
var static embed.FS

// Router registers HTTP routes; gateway.Server satisfies it.
type Router interface {
	Route(method, path string, handler app.HandlerFunc, authenticated bool)
}

// AssetPrefix is the path under which every static file except the page
// itself is served: GET /assets/{file}.
const AssetPrefix = "/assets/"

// sdkDir is the folder under AssetPrefix that serves the JavaScript SDK's
// modules (sdk/js/src, embedded by package sdkjs): the web client imports
// /assets/sdk/index.js, so the protocol lives in one place.
const sdkDir = "sdk/"

// indexFile is the page served at GET /.
const indexFile = "index.html"

// contentSecurityPolicy keeps the page on its own origin: scripts, styles,
// images and connections (HTTP and the WebSocket, which 'self' covers in
// current Chromium and Firefox) may come only from the server that served
// it, so the client makes no external request even by mistake.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Routes returns the method and path of every route Register adds: GET /
// and GET /assets/{file} for each embedded file but the page, in path
// order.
func Routes() []string {
	assets, err := load()
	if err != nil {
		return nil
	}
	routes := []string{"GET /"}
	for _, name := range sortedNames(assets) {
		if name != indexFile {
			routes = append(routes, "GET "+AssetPrefix+name)
		}
	}
	return routes
}

// Register mounts the client: GET / answers the page and GET
// /assets/{file} each embedded file, none authenticated (the page logs in
// itself). Every answer carries an ETag and Cache-Control: no-cache, so a
// reload revalidates and gets 304 for what did not change. It panics only if
// the embedded files are unreadable, which the package's tests rule out.
func Register(r Router) {
	assets, err := load()
	if err != nil {
		panic(fmt.Sprintf("web: embedded files: %v", err))
	}
	for _, name := range sortedNames(assets) {
		p := AssetPrefix + name
		if name == indexFile {
			p = "/"
		}
		r.Route("GET", p, serve(assets[name]), false)
	}
}

// load reads every embedded file into memory (the whole client is a few
// tens of kilobytes).
func load() (map[string]asset, error) {
	root, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	assets := map[string]asset{}
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		assets[name] = asset{body: body, contentType: contentType(name), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sdkFiles, err := fs.ReadDir(sdkjs.Src, "src")
	if err != nil {
		return nil, err
	}
	for _, f := range sdkFiles {
		body, err := fs.ReadFile(sdkjs.Src, "src/"+f.Name())
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		assets[sdkDir+f.Name()] = asset{body: body, contentType: contentType(f.Name()), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	if _, ok := assets[indexFile]; !ok {
		return nil, fmt.Errorf("static/%s is missing", indexFile)
	}
	return assets, nil
}

func sortedNames(assets map[string]asset) []string {
	names := make([]string, 0, len(assets))
	for n := range assets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// contentType names the types the client uses explicitly: JavaScript
// modules must be served as text/javascript or browsers refuse them, and
// the system MIME table is not the same on every machine.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func serve(a asset) app.HandlerFunc {
	return func(_ context.Context, c *app.RequestContext) {
		h := &c.Response.Header
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		if bytes.Equal(c.Request.Header.Peek("If-None-Match"), []byte(a.etag)) {
			c.Status(304)
			return
		}
		c.Data(200, a.contentType, a.body)
	}
}
