package configs

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
)

// EnvPrefix starts every environment override.
const EnvPrefix = "NEXO_"

// EnvName is the one naming rule for environment overrides: NEXO_ followed by
// the key's path upper-cased with dots as underscores, so `two_phase.enabled`
// is NEXO_TWO_PHASE_ENABLED and `http.addr` is NEXO_HTTP_ADDR. Lists take
// comma-separated values.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Keys lists every configuration key (dotted paths), sorted.
func Keys() []string {
	k := koanf.New(".")
	_ = k.Load(structs.Provider(Default(), "koanf"), nil)
	keys := k.Keys()
	sort.Strings(keys)
	return keys
}

// Load builds the configuration: defaults, then the YAML file at path (skipped
// when path is ""; an explicitly named file that does not exist is an error),
// then environment overrides from environ (os.Environ() when nil). It
// validates the result; the error names the offending key and what it allows.
// An unknown NEXO_ variable or YAML key is an error too, so a typo never
// silently falls back to a default.
func Load(path string, environ []string) (Config, error) {
	if environ == nil {
		environ = os.Environ()
	}
	known := map[string]bool{}
	byEnv := map[string]string{}
	for _, key := range Keys() {
		known[key] = true
		byEnv[EnvName(key)] = key
	}

	k := koanf.New(".")
	if path != "" {
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return Config{}, fmt.Errorf("read config %s: %w", path, err)
		}
		for _, key := range k.Keys() {
			if !known[key] {
				return Config{}, fmt.Errorf("config %s: unknown key %q", path, key)
			}
		}
	}

	var unknown []string
	err := k.Load(env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			key, ok := byEnv[name]
			if !ok {
				if !strings.HasPrefix(name, "NEXO_TEST_") {
					unknown = append(unknown, name)
				}
				return "", nil
			}
			if strings.Contains(value, ",") || isListKey(key) {
				return key, splitList(value)
			}
			return key, value
		},
	}), nil)
	if err != nil {
		return Config{}, fmt.Errorf("read environment: %w", err)
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Config{}, fmt.Errorf("unknown environment variable(s) %s (the rule: %s)", strings.Join(unknown, ", "), EnvName("section.key"))
	}

	cfg := Default()
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func isListKey(key string) bool { return key == "ws.allowed_origins" }

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// errKey is returned by Validate: it names the key and the allowed values.
type errKey struct{ key, msg string }

func (e errKey) Error() string {
	return fmt.Sprintf("config %s (%s): %s", e.key, EnvName(e.key), e.msg)
}

// IsInvalid reports whether err came from validation.
func IsInvalid(err error) bool {
	var e errKey
	return errors.As(err, &e)
}
