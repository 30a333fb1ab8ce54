package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// How messages show a value that came from the environment.
//
// A value written as a ${VAR} reference holds whatever the environment of
// the process that loaded the file holds: a secret put in the wrong key, or
// one the operator of `config set` should not learn from the daemon. So
// every message about the configuration shows such a value as written in
// the file ("${VAR}", "x-${VAR}"), never expanded: validation errors and
// ErrorAt (the daemon's persona-name checks) for the key they are about
// (scrubKey), and Scrub for any other text a caller prints about the config
// (doctor's findings, a library's error). DisplayValue is the form to
// format into a new message.

// minScrubLen: in text not about one key (Scrub), a value shorter than
// this is left alone: too common to replace safely ("on", "UTC"), too short
// to be a secret.
const minScrubLen = 6

// minBareLen: in a message about one key, that key's value is replaced
// where it stands quoted ("…") at any length, unquoted from this length.
const minBareLen = 4

// expansion is the value of key after ${VAR} expansion and the variables
// it referenced; ok is false when key did not reference any.
func (s *sourceMap) expansion(key string) (val string, refs []string, ok bool) {
	raw, has := s.raw[key]
	if !has || s.env == nil {
		return "", nil, false
	}
	val, refs, err := expand(raw, s.env)
	if err != nil {
		return "", nil, false
	}
	return val, refs, true
}

// DisplayValue is how a message shows val, the value of key: as written in
// the file ("${VAR}", "x-${VAR}") when it referenced a variable, else val.
func (c *Config) DisplayValue(key, val string) string {
	if c == nil || c.src == nil {
		return val
	}
	if raw, ok := c.src.raw[key]; ok {
		return raw
	}
	return val
}

// scrubKey is msg, a message about key, with key's value (when it came
// from the environment) shown as written, then through Scrub.
func (c *Config) scrubKey(key, msg string) string {
	if c == nil || c.src == nil {
		return msg
	}
	if val, _, ok := c.src.expansion(key); ok && val != c.src.raw[key] {
		msg = replacer(valueForms(nil, val, c.src.raw[key], 1, minBareLen)).Replace(msg)
	}
	return c.Scrub(msg)
}

// Scrub is msg with every value that came from the environment (of any
// key, and each referenced variable's own value) replaced by the reference
// written in the file, for text about the configuration that is printed.
// Values shorter than a few characters are left alone.
func (c *Config) Scrub(msg string) string {
	if c == nil || c.src == nil || c.src.env == nil || msg == "" || len(c.src.raw) == 0 {
		return msg
	}
	var forms []form
	vars := map[string]bool{}
	for k, raw := range c.src.raw {
		val, refs, ok := c.src.expansion(k)
		if !ok {
			continue
		}
		if val != raw {
			forms = valueForms(forms, val, raw, minScrubLen, minScrubLen)
		}
		for _, r := range refs {
			vars[r] = true
		}
	}
	for name := range vars {
		if val, ok := c.src.env(name); ok {
			forms = valueForms(forms, val, "${"+name+"}", minScrubLen, minScrubLen)
		}
	}
	if len(forms) == 0 {
		return msg
	}
	return replacer(forms).Replace(msg)
}

// form is one way a value may appear in a message, and what replaces it.
type form struct{ old, new string }

// valueForms appends the ways val may stand in a message (as is, quoted
// with its escapes, through RedactURL, cut by truncate to the lengths
// messages use), each to be replaced by raw: quoted forms when val has at
// least minQuoted bytes, unquoted ones from minBare.
func valueForms(forms []form, val, raw string, minQuoted, minBare int) []form {
	if val == "" || len(val) < minQuoted {
		return forms
	}
	for _, s := range []string{val, redactURL(val)} {
		for _, n := range []int{0, 80, 60, 40, 30, 20} {
			t := s
			if n > 0 {
				if t = truncate(s, n); t == s {
					continue
				}
			}
			q := strconv.Quote(t)
			forms = append(forms, form{q, strconv.Quote(raw)}, form{`"` + t + `"`, `"` + raw + `"`})
			if len(val) >= minBare {
				forms = append(forms, form{q[1 : len(q)-1], raw}, form{t, raw})
			}
		}
	}
	return forms
}

// replacer replaces the longest forms first (strings.Replacer tries its
// pairs in order at each position and never rescans what it wrote).
func replacer(forms []form) *strings.Replacer {
	slices.SortFunc(forms, func(a, b form) int {
		if c := cmp.Compare(len(b.old), len(a.old)); c != 0 {
			return c
		}
		return strings.Compare(a.old, b.old)
	})
	args := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		if f.old != "" {
			args = append(args, f.old, f.new)
		}
	}
	return strings.NewReplacer(args...)
}
