package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameRealCode: the message-path tables of docs/architecture.md
// and docs/pipeline.md name, in each row, files and functions; every file
// must exist and every function must be defined in one of the row's files,
// so the table cannot drift from the code it points to.
func TestDocsNameRealCode(t *testing.T) {
	t.Parallel()
	fileRe := regexp.MustCompile("`([a-z][a-z0-9_/]*\\.go)`")
	// `(*Type).name`, `Type.name` or `name`, in backticks.
	funcRe := regexp.MustCompile("`(?:\\(\\*?([A-Z]\\w*)\\)\\.|([A-Z]\\w*)\\.)?([A-Za-z]\\w*)`")
	for _, doc := range []string{"docs/architecture.md", "docs/pipeline.md"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(string(raw), "| step | what happens | file | function |")
		if !ok {
			t.Fatalf("%s lost its message-path table", doc)
		}
		table, _, _ := strings.Cut(after, "\n\n")
		rows := 0
		for _, row := range strings.Split(table, "\n") {
			cells := strings.Split(row, "|")
			if len(cells) < 5 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
				continue
			}
			rows++
			var sources []string
			for _, m := range fileRe.FindAllStringSubmatch(cells[3], -1) {
				b, err := os.ReadFile(filepath.Join("..", "..", m[1]))
				if err != nil {
					t.Errorf("%s names %s: %v", doc, m[1], err)
					continue
				}
				sources = append(sources, string(b))
			}
			for _, m := range funcRe.FindAllStringSubmatch(cells[4], -1) {
				recv, name := m[1]+m[2], m[3]
				var def *regexp.Regexp
				if recv != "" {
					def = regexp.MustCompile(`func \(\w+ \*?` + recv + `\) ` + name + `\b`)
				} else {
					def = regexp.MustCompile(`func ` + name + `\b`)
				}
				found := false
				for _, src := range sources {
					found = found || def.MatchString(src)
				}
				if !found {
					t.Errorf("%s: %s is not defined in %s", doc, strings.Trim(m[0], "`"), strings.TrimSpace(cells[3]))
				}
			}
		}
		if rows < 10 {
			t.Fatalf("%s: %d rows in the message-path table", doc, rows)
		}
	}
}
