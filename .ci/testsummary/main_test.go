package main

import (
	"strings"
	"testing"
)

// A canned `go test -json` stream: one pass, one integration skip, one plain
// skip, one failure with output.
const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestDB"}
{"Action":"output","Package":"p","Test":"TestDB","Output":"    storetest.go:39: MariaDB not reachable; set NEXO_TEST_MYSQL_DSN\n"}
{"Action":"skip","Package":"p","Test":"TestDB"}
{"Action":"run","Package":"p","Test":"TestShort"}
{"Action":"output","Package":"p","Test":"TestShort","Output":"    x_test.go:9: short mode\n"}
{"Action":"skip","Package":"p","Test":"TestShort"}
{"Action":"run","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"    x_test.go:12: boom\n"}
{"Action":"fail","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}
{"Action":"fail","Package":"p"}
`

func TestRunCountsAndPrints(t *testing.T) {
	var out strings.Builder
	s, err := run(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Tests != 4 || s.Skipped != 2 || s.Integration != 1 || !s.Failed {
		t.Fatalf("summary = %+v, want 4 tests, 2 skipped, 1 integration, failed", s)
	}
	got := out.String()
	for _, want := range []string{"boom", "FAIL\tp", "1 integration tests skipped", "NEXO_TEST_MYSQL_DSN", "bash .ci/run"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "short mode") || strings.Contains(got, "=== RUN") {
		t.Errorf("output of passing or skipped tests printed:\n%s", got)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "make test: 4 tests, 2 skipped") {
		t.Errorf("last line = %q", last)
	}
}

func TestRunAllPassed(t *testing.T) {
	var out strings.Builder
	s, err := run(strings.NewReader(`{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`), &out)
	if err != nil || s.Failed || s.Integration != 0 {
		t.Fatalf("s = %+v, err = %v", s, err)
	}
	if !strings.Contains(out.String(), "ok  \tp") || !strings.Contains(out.String(), "no integration test skipped") {
		t.Fatalf("output:\n%s", out.String())
	}
}

// TestUnfinishedTestOutputIsPrinted: a package that fails with a test still
// running (a timeout panic) shows that test's output.
func TestUnfinishedTestOutputIsPrinted(t *testing.T) {
	var out strings.Builder
	s, err := run(strings.NewReader(`{"Action":"run","Package":"p","Test":"TestSlow"}
{"Action":"output","Package":"p","Test":"TestSlow","Output":"panic: test timed out after 10m0s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t600.1s\n"}
{"Action":"fail","Package":"p"}
`), &out)
	if err != nil || !s.Failed {
		t.Fatalf("s = %+v, err = %v", s, err)
	}
	if !strings.Contains(out.String(), "panic: test timed out") {
		t.Fatalf("the timeout is not shown:\n%s", out.String())
	}
}
