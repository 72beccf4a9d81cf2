package configs

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

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
// then environment overrides from environ (os.Environ() when nil), and
// validates the result.
//
// Every problem is reported at once: the error joins (errors.Join) one error
// per bad key — an unknown YAML key or NEXO_ variable (so a typo never
// silently falls back to a default), a value of the wrong type (a bad
// duration included), a value out of range — each naming the key and its
// NEXO_ variable. Only an unreadable file stops before the rest is checked.
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

	var errs []error
	k := koanf.New(".")
	if path != "" {
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return Config{}, fmt.Errorf("read config %s: %w", path, err)
		}
		for _, key := range k.Keys() {
			if !known[key] {
				errs = append(errs, fmt.Errorf("config %s: unknown key %q", path, key))
				k.Delete(key)
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
		errs = append(errs, fmt.Errorf("unknown environment variable(s) %s (the rule: %s)", strings.Join(unknown, ", "), EnvName("section.key")))
	}

	// Decode key by key so that every badly typed value is named; the bad
	// ones are dropped so the rest still decodes and validates.
	keys := k.Keys()
	sort.Strings(keys)
	for _, key := range keys {
		if err := decodeKey(key, k.Get(key)); err != nil {
			errs = append(errs, err)
			k.Delete(key)
		}
	}
	cfg := Default()
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	} else {
		cfg.applyEmbeddedDefaults(k.Exists)
		if err := cfg.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return cfg, nil
}

// decodeKey decodes one key's value alone into a Config and, when that
// fails, returns an error naming the key, its variable and the expected type.
func decodeKey(key string, value any) error {
	one := koanf.New(".")
	if err := one.Set(key, value); err != nil {
		return errKey{key, err.Error()}
	}
	var c Config
	if err := one.UnmarshalWithConf("", &c, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return errKey{key, fmt.Sprintf("%s is not %s", shown(value), expected(key))}
	}
	return nil
}

// shown quotes a value for an error message.
func shown(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%v", v)
}

// expected describes the Go type behind key for an error message.
func expected(key string) string {
	t := fieldType(key)
	switch {
	case t == nil:
		return "a valid value"
	case t == reflect.TypeOf(time.Duration(0)):
		return "a duration (e.g. 500ms, 10s, 5m, 24h)"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "a list (comma-separated in the environment)"
	}
	return "a " + t.Kind().String()
}

// fieldType follows key's koanf tags through Config to the field's type.
func fieldType(key string) reflect.Type {
	t := reflect.TypeOf(Config{})
	for _, part := range strings.Split(key, ".") {
		if t.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).Tag.Get("koanf") == part {
				next = t.Field(i).Type
				break
			}
		}
		if next == nil {
			return nil
		}
		t = next
	}
	return t
}

func isListKey(key string) bool {
	return key == "ws.allowed_origins" || key == "redis.addrs" ||
		key == "http.trusted_proxies"
}

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

// IsInvalid reports whether err (or any error it joins) came from validation
// or from a badly typed value.
func IsInvalid(err error) bool {
	var e errKey
	return errors.As(err, &e)
}
