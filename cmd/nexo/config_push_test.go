package main

import (
	"strings"
	"testing"
)

// TestConfigCheckWarnsOfInsecurePushEndpoints: accepting http:// Web Push
// endpoints is valid (tests use it) but config check says it is for tests
// only, and the VAPID private key is masked.
func TestConfigCheckWarnsOfInsecurePushEndpoints(t *testing.T) {
	t.Parallel()
	env := []string{
		"NEXO_MYSQL_DSN=nexo:pw@tcp(127.0.0.1:3306)/nexo",
		"NEXO_REDIS_ADDR=127.0.0.1:6379",
		"NEXO_JWT_SECRET=" + validSecret,
		"NEXO_PUSH_WEBPUSH_ALLOW_INSECURE_ENDPOINTS=true",
		"NEXO_PUSH_WEBPUSH_VAPID_PUBLIC_KEY=BPublicKeyNotSecret",
		"NEXO_PUSH_WEBPUSH_VAPID_PRIVATE_KEY=private-key-must-not-print",
	}
	code, stdout, stderr := runCLI(t, env, "config", "check")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "# WARNING: push.webpush.allow_insecure_endpoints is true") {
		t.Errorf("no warning:\n%s", stdout)
	}
	if strings.Contains(stdout, "private-key-must-not-print") {
		t.Errorf("VAPID private key printed")
	}
	code, stdout, _ = runCLI(t, env[:3], "config", "check")
	if code != exitOK || strings.Contains(stdout, "WARNING") {
		t.Errorf("warning without the switch (exit %d):\n%s", code, stdout)
	}
}
