package app

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
)

// metricRef finds metric names in PromQL: Nexo's, database/sql's and the
// Go runtime's families (PromQL functions and label names never start so).
var metricRef = regexp.MustCompile(`\b(?:nexo|go_sql|go|process)_[a-zA-Z0-9_]+`)

// deployExprs returns every PromQL expression of the Grafana dashboard and
// the alert rules, keyed by where it is.
func deployExprs(t *testing.T) map[string]string {
	t.Helper()
	exprs := map[string]string{}
	raw, err := os.ReadFile("../../deploy/grafana/nexo.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("deploy/grafana/nexo.json does not parse: %v", err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			exprs["dashboard panel "+p.Title+" #"+string(rune('A'+i))] = tg.Expr
		}
	}
	raw, err = os.ReadFile("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yaml.Parser().Unmarshal(raw)
	if err != nil {
		t.Fatalf("deploy/prometheus/alerts.yml does not parse: %v", err)
	}
	groups, _ := doc["groups"].([]any)
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			name, _ := rule["alert"].(string)
			expr, _ := rule["expr"].(string)
			if name == "" || expr == "" {
				t.Errorf("alerts.yml: a rule without alert name or expr: %v", rule)
			}
			exprs["alert "+name] = expr
		}
	}
	return exprs
}

// balanced is a cheap syntax check of an expression: (), [] and {} nest.
func balanced(expr string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inString := false
	for _, r := range expr {
		switch {
		case r == '"':
			inString = !inString
		case inString:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && !inString
}

// TestDeployDashboardsNameRealMetrics: the Grafana dashboard and the alert
// rules parse, cover what operators need (save lag, dead letters, backlog,
// slow consumers, Redis and MySQL errors), and every metric they name is
// exported by a running server (issue 15 item 12). A metric renamed in the
// code without the dashboard fails here.
func TestDeployDashboardsNameRealMetrics(t *testing.T) {
	t.Parallel()
	exprs := deployExprs(t)
	if len(exprs) < 10 {
		t.Fatalf("only %d expressions", len(exprs))
	}
	for _, alert := range []string{"NexoSaveLagHigh", "NexoDeadLetters", "NexoBacklogGrowing", "NexoSlowConsumers", "NexoRedisErrors", "NexoMySQLErrors"} {
		if exprs["alert "+alert] == "" {
			t.Errorf("alerts.yml lacks %s", alert)
		}
	}
	for where, e := range exprs {
		if !balanced(e) {
			t.Errorf("%s: unbalanced brackets or quotes: %s", where, e)
		}
	}

	a, base, _, _ := runApp(t, embeddedConfig(t))
	a.RegisterBuildInfo("test", "test")
	ann := dial(t, base, "ann", user(t, base, "ann"))
	user(t, base, "ben")
	ann.send("ben", "dash-1", "hello")
	ann.waitPushes(2101, "ACK(saved)", func(f []frame) bool { return len(f) >= 1 })

	var missing []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		names := metricNames(scrape(t, base))
		missing = missing[:0]
		for where, e := range exprs {
			for _, name := range metricRef.FindAllString(e, -1) {
				if !names[name] {
					missing = append(missing, name+" (in "+where+")")
				}
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling /metrics until the stages observed the message
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("metrics named in deploy/ but not exported by the server:\n  %s", strings.Join(missing, "\n  "))
	}
}
