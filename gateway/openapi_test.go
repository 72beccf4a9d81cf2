package gateway_test

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// openAPIOperations reads docs/openapi.yaml and returns "METHOD /path" →
// the operation's tags.
func openAPIOperations(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Tags []string `yaml:"tags"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ops := map[string][]string{}
	for p, methods := range doc.Paths {
		for m, op := range methods {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				ops[strings.ToUpper(m)+" "+p] = op.Tags
			}
		}
	}
	return ops
}

// gatewayTags are the OpenAPI tags of the operations this package
// registers itself; operations of routes other packages add (the WebSocket
// endpoint, /msg/*) carry other tags and are checked against the fully
// wired server in cmd/nexo/openapi_test.go.
var gatewayTags = []string{"health", "auth", "user"}

// TestOpenAPIMatchesRoutes fails when a route this package registers is not
// documented in docs/openapi.yaml, or a documented operation with one of
// gatewayTags is not registered.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t)
	ops := openAPIOperations(t, "../docs/openapi.yaml")
	registered := map[string]bool{}
	for _, r := range e.srv.Routes() {
		registered[r.Method+" "+r.Path] = true
	}
	var undocumented, unregistered []string
	for r := range registered {
		if _, ok := ops[r]; !ok {
			undocumented = append(undocumented, r)
		}
	}
	for op, tags := range ops {
		if len(tags) == 0 {
			t.Errorf("docs/openapi.yaml: %s has no tag", op)
		}
		ours := slices.ContainsFunc(tags, func(tag string) bool { return slices.Contains(gatewayTags, tag) })
		if ours && !registered[op] {
			unregistered = append(unregistered, op)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unregistered)
	if len(undocumented) > 0 {
		t.Errorf("routes missing from docs/openapi.yaml: %v", undocumented)
	}
	if len(unregistered) > 0 {
		t.Errorf("documented in docs/openapi.yaml but not registered: %v", unregistered)
	}
	if len(registered) < 8 {
		t.Fatalf("only %d routes registered: %v", len(registered), registered)
	}
}
