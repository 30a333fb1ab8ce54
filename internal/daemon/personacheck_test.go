package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/agent/skills"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// config.BuiltinTools (what validation accepts) must name exactly the tools
// the daemon can register.
func TestBuiltinToolNamesMatchTheTools(t *testing.T) {
	got := config.BuiltinTools()
	want := []string{tools.NameCurrentTime, tools.NameMemory, tools.NameWebFetch, tools.NameWebSearch, skills.ToolName,
		(*heartbeat.ScheduleTool)(nil).Name(), (*heartbeat.SendMessageTool)(nil).Name(), tools.NameSpawn,
		tools.NameExec}
	want = append(want, tools.FileToolNames...)
	want = append(want, tools.NameSendFile)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("config.BuiltinTools() = %v, the tools are %v", got, want)
	}
}

// Issue 13: a personas dir with only zebra.md still resolves the built-ins;
// a name the config uses that no persona has is an error with file:line.
func TestLoadPersonaSetBuiltinsAndReferences(t *testing.T) {
	dir := t.TempDir()
	pdir := filepath.Join(dir, "personas")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "zebra.md"), []byte("---\ndescription: Z\ntools: [memory, web_fetc]\n---\nZebra.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, yaml string
		want       []string // "" = no error
	}{
		{"ok", "personas:\n  default: assistant\n", []string{"zebra.md:3: tools: unknown tool \"web_fetc\" (did you mean \"web_fetch\"?)"}},
		{"default", "personas:\n  default: zebr\n", []string{"config.yaml:2: personas.default: unknown persona \"zebr\" (did you mean \"zebra\"?)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse(filepath.Join(dir, "config.yaml"), []byte(tt.yaml), func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			set, skipped, err := LoadPersonaSet(cfg, pdir)
			if len(skipped) != 0 {
				t.Fatalf("skipped: %v", skipped)
			}
			for _, n := range []string{"assistant", "buddy", "reporter", "zebra"} {
				if !set.Has(n) {
					t.Fatalf("persona %s does not resolve; have %v", n, set.Names())
				}
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// A missing directory is not an error: the built-ins serve.
	cfg, _ := config.Parse("", nil, func(string) (string, bool) { return "", false })
	set, skipped, err := LoadPersonaSet(cfg, filepath.Join(dir, "nope"))
	if err != nil || len(skipped) != 0 || set.Len() != 3 {
		t.Fatalf("missing dir: %v %v %v", set.Names(), skipped, err)
	}
}

// A persona name that came from a ${VAR} reference is shown as the
// reference in the error (the daemon's log, the admin alert, the answer to
// `config set` / /admin/config/check), never as the variable's value.
func TestCheckPersonasShowsReferencesNotValues(t *testing.T) {
	const secret = "hunter2-topsecret"
	env := func(k string) (string, bool) {
		if k == "MYSECRET" {
			return secret, true
		}
		return "", false
	}
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "config.yaml"), []byte(`personas:
  default: ${MYSECRET}
  by_channel:
    telegram: ${MYSECRET}
  by_target:
    "telegram:1": x-${MYSECRET}
jobs:
  - name: daily
    schedule: "@daily"
    prompt: hello
    persona: ${MYSECRET}
    deliver_to: ["telegram:1"]
`), env)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadPersonaSet(cfg, filepath.Join(t.TempDir(), "personas"))
	if err == nil {
		t.Fatal("unknown personas accepted")
	}
	got := err.Error()
	for _, want := range []string{
		`config.yaml:2: personas.default: unknown persona "${MYSECRET}"`,
		`config.yaml:4: personas.by_channel.telegram: unknown persona "${MYSECRET}"`,
		`config.yaml:6: personas.by_target.telegram:1: unknown persona "x-${MYSECRET}"`,
		`config.yaml:11: jobs[0].persona: unknown persona "${MYSECRET}"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hunter2") {
		t.Fatalf("the variable's value is in the error:\n%s", got)
	}
}
