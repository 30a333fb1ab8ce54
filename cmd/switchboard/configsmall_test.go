package main

// Issue 28, item 6 (the config parts), with the built binary: a YAML syntax
// error is reported at the line that causes it, with one line number; an
// unset secret reads "(not set)"; `config set` and `doctor` say which file
// they use; `config show` (named in the README) prints the effective config.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// secondLine finds a line number in a message's text ("line 24").
var secondLine = regexp.MustCompile(`line \d`)

func TestBinaryYAMLSyntaxErrorLines(t *testing.T) {
	filler := strings.Repeat("# comment\n", 21)
	for _, tt := range []struct {
		name, body, want string
	}{
		{"unclosed [ on line 25", "bot:\n  name: Bot\n" + filler + "agent:\n  tools: [current_time, web_fetch\nllm:\n  model: x\n",
			"config.yaml:25:10: invalid YAML: the list opened with [ here is not closed (add the closing ])"},
		{"unclosed [ over lines", "agent:\n  tools: [current_time,\n    web_fetch\nllm:\n  model: x\n",
			"config.yaml:2:10: invalid YAML: the list opened with [ here is not closed"},
		{"unclosed [ on line 1", "[a, b\n", "config.yaml:1:1: invalid YAML: the list opened with [ here is not closed"},
		{"unclosed {", "bot:\n  name: Bot\n\n\nchannels:\n  telegram: {enabled: false, mode: polling\n  discord: {}\n",
			"config.yaml:6:13: invalid YAML: the mapping opened with { here is not closed (add the closing })"},
		{"key indented too little", "bot:\n  name: Bot\n  data_dir: ./d\n bad: x\nllm:\n  model: y\n", "config.yaml:4: invalid YAML: "},
		{"key indented too much after a list", "agent:\n  tools:\n    - a\n    - b\n   c: d\n", "config.yaml:5: invalid YAML: "},
		{"stray ]", "bot:\n  name: Bot\nllm: ]\n", "config.yaml:3: invalid YAML: "},
		{"tab under a key", "bot:\n  name: Bot\nllm:\n  model: x\n\tmax_tokens: 3\n", "config.yaml:5:1: invalid YAML: a tab character indents this line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runBin(t, hermeticEnv(t), "config", "validate", writeConfig(t, tt.body))
			msg := firstLine(r.stderr)
			expect(t, r, 2, msg, tt.want)
			// One line number: the parser's own (often another) is not repeated.
			if secondLine.MatchString(msg) {
				t.Fatalf("the message names a second line: %s", msg)
			}
		})
	}
}

func TestBinaryConfigGetUnsetSecret(t *testing.T) {
	cfg := writeConfig(t, "llm:\n  api_key: ${OPENAI_API_KEY}\n")
	r := runBin(t, hermeticEnv(t), "--config", cfg, "config", "get", "llm.api_key")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "(not set)" {
		t.Fatalf("config get of an unset key: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runBin(t, hermeticEnv(t, "OPENAI_API_KEY=sk-set-1234567890"), "--config", cfg, "config", "get", "llm.api_key")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[redacted]" {
		t.Fatalf("config get of a set secret: exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestBinaryConfigNoticeOnSetAndDoctor(t *testing.T) {
	cfg := writeConfig(t, "bot:\n  name: Bot\n  data_dir: ./data\nserver:\n  listen: \"\"\n")
	dir := filepath.Dir(cfg)
	want := "switchboard: using config " + cfg + " (found by lookup)"
	for _, args := range [][]string{{"config", "set", "bot.name", "Other"}, {"config", "unset", "bot.name"}, {"doctor"}} {
		r := runIn(t, dir, hermeticEnv(t), args...)
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("%v: stderr does not say %q:\n%s", args, want, r.stderr)
		}
	}
}

func TestBinaryConfigShow(t *testing.T) {
	cfg := writeConfig(t, "bot:\n  name: Shown\nllm:\n  api_key: ${SB_SHOW_KEY}\n")
	r := runBin(t, hermeticEnv(t, "SB_SHOW_KEY=sk-show-secret-123"), "--config", cfg, "config", "show")
	expect(t, r, 0, r.stdout, "name: Shown")
	expect(t, r, 0, r.stdout, "api_key: '[redacted]'")
	noSecret(t, r, "sk-show-secret-123")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "config show") {
		t.Fatal("the README no longer names `config show`")
	}
}
