// Package importcheck tests .ci/importcheck.sh, the import-direction rules
// that `make lint` and `make test` enforce: each rule refuses a violation,
// and the rules pass the layout docs/architecture.md describes.
package importcheck

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/nexo-im/nexo"

// run checks the "package import..." lines with IMPORTCHECK_INPUT and
// returns the script's exit code and standard error.
func run(t *testing.T, lines ...string) (int, string) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "imports")
	for i, l := range lines {
		fields := strings.Fields(l)
		for j, f := range fields {
			if f == "." {
				fields[j] = mod
			} else {
				fields[j] = mod + "/" + f
			}
		}
		lines[i] = strings.Join(fields, " ")
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../importcheck.sh")
	cmd.Env = append(os.Environ(), "IMPORTCHECK_INPUT="+in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	t.Fatalf("run importcheck: %v", err)
	return 0, ""
}

func TestRulesRefuseViolations(t *testing.T) {
	for _, c := range []struct {
		name, line, want string
	}{
		{"service imports gateway", "services/chat gateway/ws", "services never import the gateway"},
		{"service imports workers", "services/chat workers", "services never import workers"},
		{"worker imports a service", "workers services/chat", "workers reach services only through interfaces they declare"},
		{"worker imports gateway", "workers gateway/ws", "workers never import the gateway"},
		{"gateway imports workers", "gateway/routes workers", "gateway never imports workers"},
		{"package imports its parent", "gateway/routes gateway", "no package imports its parent"},
		{"package imports an ancestor", "gateway/ws/inner gateway", "no package imports its parent"},
		{"domain imports store", "domain store", "domain and configs import nothing of ours"},
		{"store imports streams", "store streams", "store imports only domain and configs"},
		{"streams imports store", "streams store", "streams imports only domain and configs"},
		{"anything imports cmd", "gateway cmd/app", "cmd wires everything"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stderr := run(t, c.line)
			if code != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("%q: exit %d, stderr %q; want exit 1 naming %q", c.line, code, stderr, c.want)
			}
		})
	}
}

func TestRulesAcceptTheLayout(t *testing.T) {
	code, stderr := run(t,
		"store domain configs",
		"store/storetest store store/redistest domain",
		"streams domain configs",
		"services/sync services/chat store streams domain configs",
		"workers store streams domain configs",
		"gateway gateway/api gateway/ws gateway/routes services/chat",
		"gateway/routes gateway/api gateway/ws services/group",
		"cmd/app gateway workers services/chat store",
	)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestLintRunsTheCheck: make lint and make test both run the import check.
func TestLintRunsTheCheck(t *testing.T) {
	for _, target := range []string{"lint", "test"} {
		out, err := exec.Command("make", "-C", "../..", "-n", target).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		if !strings.Contains(string(out), ".ci/importcheck.sh") {
			t.Fatalf("make %s does not run .ci/importcheck.sh:\n%s", target, out)
		}
	}
}
