package platform

import (
	"fmt"
	"log/slog"
	"reflect"
)

const redacted = "[redacted]"

// Secret holds a token or key. Every rendering (fmt verbs, JSON, YAML,
// text, slog) prints "[redacted]" for a set secret and "" for an empty one;
// only Value returns the secret itself.
type Secret struct {
	v string
}

// NewSecret wraps a value (for tests and programmatic configs).
func NewSecret(v string) Secret { return Secret{v: v} }

// Value returns the secret in clear. Pass it only to the client that needs it.
func (s Secret) Value() string { return s.v }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s.v != "" }

// String renders "[redacted]" (or "" when empty).
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return redacted
}

// GoString is used by %#v.
func (s Secret) GoString() string { return fmt.Sprintf("platform.Secret(%q)", s.String()) }

// Format makes every fmt verb render the redacted form.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'v':
		if f.Flag('#') {
			_, _ = f.Write([]byte(s.GoString()))
			return
		}
		_, _ = f.Write([]byte(s.String()))
	case 'q':
		_, _ = fmt.Fprintf(f, "%q", s.String())
	default:
		_, _ = f.Write([]byte(s.String()))
	}
}

// MarshalJSON renders the redacted form as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) {
	return []byte(`"` + s.String() + `"`), nil
}

// MarshalText renders the redacted form.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalYAML renders the redacted form.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// LogValue makes slog print the redacted form.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// SecretsOf returns the Secret fields of a section (nested structs too), so
// a caller that scrubs output (doctor) knows every platform's secrets.
func SecretsOf(s Section) []Secret {
	var out []Secret
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return
		}
		if sec, ok := v.Interface().(Secret); ok {
			out = append(out, sec)
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(s))
	return out
}
