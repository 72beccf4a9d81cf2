package configs

import (
	"regexp"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
)

// Masked is what a secret is printed as.
const Masked = "********"

// dsnPassword matches the password of a DSN ("user:PASSWORD@tcp(...)" or a
// URL's "//user:PASSWORD@host").
var dsnPassword = regexp.MustCompile(`^((?:[a-z][a-z0-9+.-]*://)?[^:/@]*:)([^@]*)@`)

// IsSecret reports whether a key holds a secret that must never be printed:
// a key whose last segment names a secret, password, token or private key.
// DSNs are not secret as a whole; only their password part is (MaskedYAML).
func IsSecret(key string) bool {
	last := key[strings.LastIndex(key, ".")+1:]
	for _, word := range []string{"secret", "password", "token", "private_key", "api_key"} {
		if strings.Contains(last, word) {
			return true
		}
	}
	return last == "keys" || last == "api_keys"
}

// MaskedYAML renders the configuration as YAML with every key present,
// durations as Go duration strings (10s, 24h0m0s), every secret (IsSecret)
// replaced by Masked when set, and the password inside a DSN masked too. It
// is what `nexo config check` prints.
func (c Config) MaskedYAML() ([]byte, error) {
	k := koanf.New(".")
	if err := k.Load(structs.Provider(c, "koanf"), nil); err != nil {
		return nil, err
	}
	out := koanf.New(".")
	for _, key := range k.Keys() {
		v := k.Get(key)
		switch x := v.(type) {
		case time.Duration:
			v = x.String()
		case string:
			switch {
			case x != "" && IsSecret(key):
				v = Masked
			case strings.HasSuffix(key, "dsn") || strings.HasSuffix(key, "url"):
				v = dsnPassword.ReplaceAllString(x, "${1}"+Masked+"@")
			}
		case []string:
			if len(x) > 0 && IsSecret(key) {
				v = []string{Masked}
			}
		}
		if err := out.Set(key, v); err != nil {
			return nil, err
		}
	}
	return out.Marshal(yaml.Parser())
}
