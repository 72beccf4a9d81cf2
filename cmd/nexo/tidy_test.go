package main

import (
	"os/exec"
	"testing"
)

// TestGoModTidy fails when go.mod or go.sum would change under `go mod tidy`
// (the same check `make lint` makes): a module added without tidying, or one
// left behind after its last import went.
func TestGoModTidy(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go toolchain not on PATH")
	}
	cmd := exec.Command(goBin, "mod", "tidy", "-diff")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go mod tidy -diff: %v (run go mod tidy):\n%s", err, out)
	}
}
