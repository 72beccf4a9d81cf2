package web

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestOpenAPIDocumentsTheClient: docs/openapi.yaml lists exactly the
// client's routes under the web tag (cmd/app's test compares the whole
// wired route table; this one names what is missing here).
func TestOpenAPIDocumentsTheClient(t *testing.T) {
	raw, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Tags []string `yaml:"tags"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for p, ops := range doc.Paths {
		for m, op := range ops {
			if slices.Contains(op.Tags, "web") {
				documented = append(documented, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(documented)
	want := Routes()
	sort.Strings(want)
	if !slices.Equal(documented, want) {
		t.Errorf("docs/openapi.yaml web operations %v, want %v", documented, want)
	}
}
