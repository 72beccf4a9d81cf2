package main

import (
	"context"
	"strings"
	"testing"
)

// TestHelpListsEveryCommand: `nexo-bench --help` (run's flags) and
// `nexo-bench help` both name suite and summarize (issue 15 item 17).
func TestHelpListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"run", "-h"}} {
		var out, errOut strings.Builder
		if code := cli(context.Background(), args, &out, &errOut); code != exitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		text := out.String() + errOut.String()
		for _, want := range []string{"suite", "summarize", "run"} {
			if !strings.Contains(text, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, text)
			}
		}
	}
}

// `run --scenario upload` is the upload command, with the rest of the
// arguments as its flags.
func TestUploadScenarioIsTheUploadCommand(t *testing.T) {
	for _, args := range [][]string{
		{"--scenario", "upload", "--count", "3"},
		{"--count", "3", "-scenario=upload"},
	} {
		rest, ok := uploadScenario(args)
		if !ok || len(rest) != 2 || rest[0] != "--count" || rest[1] != "3" {
			t.Errorf("%q: %q %v, want [--count 3] true", args, rest, ok)
		}
	}
	if _, ok := uploadScenario([]string{"--scenario", "single"}); ok {
		t.Error("--scenario single taken for upload")
	}
}
