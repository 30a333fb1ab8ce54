package config

import (
	"fmt"
	"strings"
)

// EnvFunc looks up an environment variable (os.LookupEnv in production).
type EnvFunc func(string) (string, bool)

// expand replaces ${VAR} and ${VAR:-default} in s. It returns the names of
// the variables referenced. "$${" is a literal "${". Errors never contain a
// variable's value.
func expand(s string, env EnvFunc) (string, []string, error) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	var (
		b    strings.Builder
		refs []string
	)
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", refs, fmt.Errorf("unterminated \"${\" (missing \"}\"; write \"$${\" for a literal \"${\")")
		}
		expr := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			return "", refs, fmt.Errorf("invalid variable name %q in \"${...}\" (letters, digits and _)", truncate(name, 40))
		}
		refs = append(refs, name)
		v, ok := "", false
		if env != nil {
			v, ok = env(name)
		}
		if hasDef && (!ok || v == "") {
			v = def
		}
		b.WriteString(v)
		i += 2 + end + 1
	}
	return b.String(), refs, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
