package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time: go build -ldflags "-X main.version=v1.2.3 -X main.commit=abc123".
// When empty, versionString falls back to the module and VCS information Go
// embeds in the binary.
var (
	version = ""
	commit  = ""
)

// versionString is "nexo <version> (commit <commit>, <go version>)".
func versionString() string {
	v, c := buildVersion()
	return fmt.Sprintf("nexo %s (commit %s, %s)", v, c, runtime.Version())
}

// buildVersion is the version and commit: the ldflags values, else what Go
// embedded (module version, VCS revision), else "dev" and "unknown".
func buildVersion() (v, c string) {
	v, c = version, commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" {
			v = info.Main.Version
		}
		if c == "" {
			var rev, modified string
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if rev != "" && modified == "true" {
				rev += "-dirty"
			}
			c = rev
		}
	}
	if v == "" {
		v = "dev"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}
