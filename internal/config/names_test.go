package config

import (
	"errors"
	"strings"
	"testing"
)

func noEnv(string) (string, bool) { return "", false }

// Issue 14 item 8: syntax errors are placed where they start.
func TestYAMLErrorsPointAtTheCause(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		line, col  int
		want       string
	}{
		{"unclosed double quote closed later", "bot:\n  name: \"Bot\n  data_dir: ./data\nlog:\n  level: \"info\"\n", 2, 9, "value quoted with \" that starts here is not closed"},
		{"unclosed at end", "bot:\n  name: Bot\nllm:\n  model: \"gpt\n", 4, 10, "not closed"},
		{"unclosed in a list", "bot:\n  admins:\n    - \"telegram:user:1\n", 3, 7, "not closed"},
		{"tab indent", "bot:\n\tname: Bot\n", 2, 1, "a tab character indents this line"},
		{"tab deeper", "bot:\n  name: Bot\nllm:\n  \tmodel: x\n", 4, 3, "YAML indentation must use spaces"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.body), noEnv)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not a *config.Error", err)
			}
			if e.Line != tt.line || e.Col != tt.col || !strings.Contains(e.Msg, tt.want) || !strings.Contains(e.Msg, "the YAML parser says") {
				t.Fatalf("got %d:%d %q, want %d:%d containing %q", e.Line, e.Col, e.Msg, tt.line, tt.col, tt.want)
			}
		})
	}
	// Quotes that close, block scalars and comments are not blamed.
	body := "bot:\n  name: \"Bot \\\" quoted\"\n  data_dir: 'it''s'\nagent:\n  tools: [current_time]\njobs:\n  - name: j\n    schedule: \"0 9 * * *\"\n    prompt: |\n      say \"hi\n    deliver_to: [\"console:local\"]\n# \"open in a comment\n"
	if _, err := Parse("c.yaml", []byte(body), noEnv); err != nil {
		t.Fatalf("valid file refused: %v", err)
	}
	_, err := Parse("c.yaml", []byte(body+"bot2: [\n"), noEnv)
	var e *Error
	if !errors.As(err, &e) || strings.Contains(e.Msg, "not closed on this line") {
		t.Fatalf("a closed quote was blamed: %v", err)
	}
}

// Issue 14 item 6: unknown built-in tool names are validation errors.
func TestUnknownToolNames(t *testing.T) {
	_, err := Parse("c.yaml", []byte("agent:\n  tools:\n    - current_time\n    - nope\n    - web_fetc\n"), noEnv)
	if err == nil {
		t.Fatal("unknown tools accepted")
	}
	for _, want := range []string{
		"c.yaml:4: agent.tools[1]: unknown tool \"nope\"; known: current_time, delete_file, edit_file, exec, list_files, memory, read_file, schedule, send_file, send_message, skill, spawn, web_fetch, web_search, write_file",
		"c.yaml:5: agent.tools[2]: unknown tool \"web_fetc\" (did you mean \"web_fetch\"?)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not contain %q", err, want)
		}
	}
	if _, err := Parse("c.yaml", []byte("agent:\n  tools: []\n"), noEnv); err != nil {
		t.Fatalf("an empty list refused: %v", err)
	}
}

func TestIsSecretKeyAndErrorAt(t *testing.T) {
	for key, want := range map[string]bool{"llm.api_key": true, "channels.slack.signing_secret": true, "server.admin_token": true,
		"llm.model": false, "nope.x": false, "": false} {
		if got := IsSecretKey(key); got != want {
			t.Errorf("IsSecretKey(%q) = %v", key, got)
		}
	}
	cfg, err := Parse("c.yaml", []byte("bot:\n  name: B\npersonas:\n  default: x\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ErrorAt("personas.default", "unknown persona").Error(); got != "c.yaml:4: personas.default: unknown persona" {
		t.Fatalf("ErrorAt = %q", got)
	}
}
