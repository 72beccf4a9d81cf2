package app

import (
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// pathParam is a Hertz path parameter segment (":id").
var pathParam = regexp.MustCompile(`:(\w+)`)

// TestOpenAPIMatchesWiredServer fails when the route table of the fully
// wired server (every route every package registers, as `nexo serve` runs
// it) and the paths and methods of docs/openapi.yaml disagree in either
// direction.
func TestOpenAPIMatchesWiredServer(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for p, methods := range doc.Paths {
		for m := range methods {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented[strings.ToUpper(m)+" "+p] = true
			}
		}
	}

	a, err := New(t.Context(), embeddedConfig(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.stopAll)
	registered := map[string]bool{}
	for _, r := range a.server.Routes() {
		// Hertz writes a path parameter :id, OpenAPI {id}.
		registered[r.Method+" "+pathParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	var missing, extra []string
	for r := range registered {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for d := range documented {
		if !registered[d] {
			extra = append(extra, d)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("served but not in docs/openapi.yaml: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("in docs/openapi.yaml but not served: %v", extra)
	}
	if len(registered) == 0 {
		t.Fatal("no routes")
	}
}
