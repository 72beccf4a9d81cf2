// Command testsummary reads `go test -json` on stdin, prints what plain
// `go test` would (package result lines, the output of failing tests, build
// errors) and ends with one line counting the skipped tests: how many were
// integration tests skipped because NEXO_TEST_* is unset, and how to run
// them. `make test` pipes into it.
//
// Exit status: 1 when any test or package failed (or the input ended before a
// package reported), 0 otherwise.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// summary is what the run counted.
type summary struct {
	Tests, Skipped, Integration int
	Failed                      bool
}

// integrationMarker is in the skip message of every test that needs a real
// backend (store/storetest: "set NEXO_TEST_MYSQL_DSN ...").
const integrationMarker = "NEXO_TEST_"

func main() {
	s, err := run(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if s.Failed {
		os.Exit(1)
	}
}

// run copies the relevant output of the events in r to w and returns the
// counts, after writing the final summary line.
func run(r io.Reader, w io.Writer) (summary, error) {
	var s summary
	testOut := map[string]*strings.Builder{} // package + "\x00" + test
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (e.g. a build error printed by go itself): pass it on.
			fmt.Fprintln(w, string(line))
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
			s.Failed = true
		case e.Test == "" && e.Action == "output":
			// Package-level lines: "ok  pkg 1.2s", "FAIL", "--- FAIL" summaries.
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS\n") {
				fmt.Fprint(w, e.Output)
			}
		case e.Test == "" && e.Action == "fail":
			s.Failed = true
			// Tests of this package that never ended (a timeout panic, a
			// crash): their output is the only explanation, so print it.
			for k, b := range testOut {
				if strings.HasPrefix(k, e.Package+"\x00") {
					fmt.Fprint(w, b.String())
					delete(testOut, k)
				}
			}
		case e.Action == "output":
			b := testOut[key]
			if b == nil {
				b = &strings.Builder{}
				testOut[key] = b
			}
			b.WriteString(e.Output)
		case e.Action == "pass":
			s.Tests++
			delete(testOut, key)
		case e.Action == "skip":
			s.Tests++
			s.Skipped++
			if b := testOut[key]; b != nil && strings.Contains(b.String(), integrationMarker) {
				s.Integration++
			}
			delete(testOut, key)
		case e.Action == "fail":
			s.Tests++
			s.Failed = true
			if b := testOut[key]; b != nil {
				fmt.Fprint(w, b.String())
			}
			delete(testOut, key)
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	fmt.Fprintln(w, s.line())
	return s, nil
}

// line is the one final line: it says how many tests ran, how many skipped,
// and how to run the integration tests that skipped.
func (s summary) line() string {
	out := fmt.Sprintf("make test: %d tests, %d skipped", s.Tests, s.Skipped)
	if s.Integration > 0 {
		out += fmt.Sprintf(" (%d integration tests skipped: NEXO_TEST_MYSQL_DSN and NEXO_TEST_REDIS_ADDR are not set or not reachable; run them with `bash .ci/run`, or see README.md \"Run it\")", s.Integration)
	} else {
		out += " (no integration test skipped)"
	}
	if s.Failed {
		out += ": FAILED"
	}
	return out
}
