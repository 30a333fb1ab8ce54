package config

import (
	"strings"
	"testing"
)

// An error about a value that came from a ${VAR} reference shows the
// reference as written, never the variable's value: ErrorAt (the daemon's
// persona-name checks) as validation does, and Scrub for any text about the
// config.
func TestErrorsShowReferencesNotValues(t *testing.T) {
	const secret = "hunter2-topsecret"
	env := envOf(map[string]string{"MYSECRET": secret, "SHORT": "ab"})
	c := mustParse(t, `personas:
  default: ${MYSECRET}
  by_channel:
    telegram: ${MYSECRET}
  by_target:
    "telegram:1": x-${MYSECRET}
    "telegram:2": ${SHORT}
jobs:
  - name: daily
    schedule: "@daily"
    prompt: hello
    persona: ${MYSECRET}
    deliver_to: ["telegram:1"]
`, env)
	known := []string{"assistant", "buddy", "reporter"}
	for _, tt := range []struct{ key, val, want string }{
		{"personas.default", c.Personas.Default, `config.yaml:2: personas.default: unknown persona "${MYSECRET}"; known: assistant, buddy, reporter`},
		{"personas.by_channel.telegram", c.Personas.ByChannel["telegram"], `config.yaml:4: personas.by_channel.telegram: unknown persona "${MYSECRET}"`},
		{"personas.by_target.telegram:1", c.Personas.ByTarget["telegram:1"], `config.yaml:6: personas.by_target.telegram:1: unknown persona "x-${MYSECRET}"`},
		{"personas.by_target.telegram:2", c.Personas.ByTarget["telegram:2"], `config.yaml:7: personas.by_target.telegram:2: unknown persona "${SHORT}"`},
		{"jobs[0].persona", c.Jobs[0].Persona, `config.yaml:12: jobs[0].persona: unknown persona "${MYSECRET}"`},
	} {
		t.Run(tt.key, func(t *testing.T) {
			if !strings.Contains(tt.val, secret) && tt.val != "ab" {
				t.Fatalf("the value %q was not expanded, the case proves nothing", tt.val)
			}
			got := c.ErrorAt(tt.key, "%s", UnknownName("persona", tt.val, known)).Error()
			if !strings.Contains(got, tt.want) || strings.Contains(got, "hunter2") || strings.Contains(got, `"ab"`) {
				t.Fatalf("ErrorAt = %q, want it to contain %q and not the value", got, tt.want)
			}
			if d := c.DisplayValue(tt.key, tt.val); !strings.HasPrefix(d, "${") && !strings.HasPrefix(d, "x-${") {
				t.Fatalf("DisplayValue(%s) = %q", tt.key, d)
			}
		})
	}
	if d := c.DisplayValue("jobs[0].name", c.Jobs[0].Name); d != "daily" {
		t.Fatalf("a literal value is shown as written: %q", d)
	}
	for _, tt := range []struct{ in, want string }{
		{"lookup hunter2-topsecret: no such host", "lookup ${MYSECRET}: no such host"},
		{`persona "x-hunter2-topsecret" (available: a)`, `persona "x-${MYSECRET}" (available: a)`},
		{"nothing to hide here", "nothing to hide here"},
	} {
		if got := c.Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
