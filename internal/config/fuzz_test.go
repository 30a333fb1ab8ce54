package config

import (
	"os"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("../../config.yaml"); err == nil {
		f.Add(data)
	}
	if data, err := os.ReadFile("testdata/edit_input.yaml"); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"", "~", "[]", "llm: {model: x}", "jobs:\n  - name: a\n    schedule: \"@daily\"\n    prompt: p\n    deliver_to: [telegram:1]\n",
		"a: &x [*x]", "bot: &b {<<: *b}\n", "llm: &l {<<: [*l, *l, *l]}\n", "bot: &b {name: x}\nllm: *b\n", "<<: {bot: {}}", "heartbeat: {schedule: \"TZ=\"}",
		"llm:\n  model: ${X:-${Y}}\n", "retention: {dedup_ttl: 9999999999d}", "agent:\n  tools: !!binary aGVsbG8=\n",
		"personas:\n  by_target: {? [a] : b}\n", "llm: {temperature: .nan}", "bot:\n  admins: [\"telegram:user:1\", null]\n",
	} {
		f.Add([]byte(s))
	}
	env := envOf(map[string]string{"X": "1", "TELEGRAM_BOT_TOKEN": "t"})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data, env)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if c.Path != "fuzz.yaml" {
			t.Fatalf("Path = %q", c.Path)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate rejects: %v", err)
		}
		if _, err := c.RedactedYAML(); err != nil {
			t.Fatalf("RedactedYAML: %v", err)
		}
	})
}
