package skills

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

func writeSkill(t *testing.T, dir, folder, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, folder), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, folder, FileName), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skillFile(name, desc, body string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n%s\n", name, desc, body)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type personaMap map[string]agent.Persona

func (m personaMap) Persona(name string) (agent.Persona, bool) {
	if name == "" {
		name = "assistant"
	}
	p, ok := m[name]
	return p, ok
}

var testPersonas = personaMap{
	"assistant": {Name: "assistant", Identity: "You help."},
	"pirate":    {Name: "pirate", Identity: "You are a pirate.", Skills: []string{"greet"}},
	"plain":     {Name: "plain", Identity: "You are plain.", Skills: []string{}},
}

// skillsDir holds two skills and a malformed one.
func skillsDir(t *testing.T) string {
	dir := t.TempDir()
	writeSkill(t, dir, "greet", skillFile("greet", "Greet people in pirate speak.", "# Greeting\nAlways say \"Arr, matey!\" first."))
	writeSkill(t, dir, "release-notes", skillFile("release-notes", "Write release notes from a list of changes.", "Group the changes by area."))
	writeSkill(t, dir, "broken", skillFile("brokn", "Never shown.", "Never loaded."))
	if err := os.MkdirAll(filepath.Join(dir, "notes-without-skill"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newSkillAgent(t *testing.T, lib *Library, r fakellm.Responder) (*agent.Agent, *fakellm.Server) {
	t.Helper()
	reg := agent.NewRegistry()
	if err := reg.Register(NewTool(lib, 0)); err != nil {
		t.Fatal(err)
	}
	srv := fakellm.Start(t, r)
	a, err := agent.New(agent.Options{BaseURL: srv.URL, APIKey: "k", Model: "m", HTTPClient: srv.HTTPClient(),
		Tools: reg, Personas: testPersonas, Location: time.UTC,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	return a, srv
}

// Issue 16: the prompt lists the skills (name and description only), the
// skill tool loads one's full text in a real turn, and a malformed
// SKILL.md is logged with file:line and skipped.
func TestSkillListedAndLoaded(t *testing.T) {
	var logs lockedBuffer
	lib := NewLibrary(skillsDir(t), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	a, srv := newSkillAgent(t, lib, func(r *fakellm.Request) fakellm.Response {
		if len(r.ToolResults()) > 0 {
			return fakellm.Response{Content: "Arr, matey!"}
		}
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: ToolName, Arguments: `{"name":"greet"}`}}}
	})
	res, err := a.ProcessMessage(context.Background(), agent.Request{SessionKey: "s", Text: "hi"})
	if err != nil || res.Text != "Arr, matey!" {
		t.Fatalf("%+v %v", res, err)
	}
	first := srv.Requests()[0]
	sys := first.SystemPrompt()
	for _, want := range []string{"## Skills\n", "call the skill tool with its name",
		"- greet: Greet people in pirate speak.\n- release-notes: Write release notes from a list of changes.\n"} {
		if !strings.Contains(sys, want) {
			t.Fatalf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "Arr, matey") || strings.Contains(sys, "brokn") || strings.Contains(sys, "Never shown") {
		t.Fatalf("the prompt shows a skill's body or a malformed skill:\n%s", sys)
	}
	if !slices.Contains(first.ToolNames(), ToolName) {
		t.Fatalf("tools offered: %v", first.ToolNames())
	}
	out := srv.LastRequest().ToolResults()[0].Content
	if !strings.Contains(out, "Skill: greet\n\n# Greeting\nAlways say \"Arr, matey!\" first.") {
		t.Fatalf("tool result: %s", out)
	}
	want := fmt.Sprintf("%s:2: name \\\"brokn\\\" does not match the folder \\\"broken\\\"", filepath.Join(lib.Dir(), "broken", FileName))
	if !strings.Contains(logs.String(), "skill skipped") || !strings.Contains(logs.String(), want) {
		t.Fatalf("logs lack %s:\n%s", want, logs.String())
	}
	if n := strings.Count(logs.String(), "skill skipped"); n != 1 {
		t.Fatalf("the malformed file was reported %d times, want once until it changes:\n%s", n, logs.String())
	}
}

// Issue 16: a persona's skills allowlist limits what the prompt lists and
// what the tool loads; with no allowed skill the tool is not offered.
func TestSkillPersonaAllowlist(t *testing.T) {
	lib := NewLibrary(skillsDir(t), Options{})
	a, srv := newSkillAgent(t, lib, func(r *fakellm.Request) fakellm.Response {
		if len(r.ToolResults()) > 0 {
			return fakellm.Response{Content: "ok"}
		}
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: ToolName, Arguments: `{"name":"release-notes"}`}}}
	})
	ctx := context.Background()
	sys, _, err := a.Prompt(ctx, agent.Request{Persona: "pirate"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sys[0], "- greet: ") || strings.Contains(sys[0], "release-notes") {
		t.Fatalf("pirate prompt:\n%s", sys[0])
	}
	if _, err := a.ProcessMessage(ctx, agent.Request{SessionKey: "p", Text: "notes", Persona: "pirate"}); err != nil {
		t.Fatal(err)
	}
	out := srv.LastRequest().ToolResults()[0].Content
	if !strings.Contains(out, `skill: no skill named "release-notes"; available: greet`) || strings.Contains(out, "Group the changes") {
		t.Fatalf("pirate loaded a skill it may not use: %s", out)
	}
	sys, _, err = a.Prompt(ctx, agent.Request{Persona: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sys[0], "## Skills") || strings.Contains(sys[0], "greet") {
		t.Fatalf("plain prompt lists skills:\n%s", sys[0])
	}
	n := srv.RequestCount()
	if _, err := a.ProcessMessage(ctx, agent.Request{SessionKey: "q", Text: "hi", Persona: "plain"}); err != nil {
		t.Fatal(err)
	}
	if req := srv.Requests()[n]; slices.Contains(req.ToolNames(), ToolName) {
		t.Fatalf("the skill tool is offered to a persona without skills: %v", req.ToolNames())
	}
}

// A skill longer than a page comes in pages; the note says how to go on.
func TestSkillPaging(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("a", 40) + strings.Repeat("b", 40) + strings.Repeat("c", 20)
	writeSkill(t, dir, "long", skillFile("long", "A long one.", body))
	tool := NewTool(NewLibrary(dir, Options{}), 40)
	for _, tt := range []struct {
		args, want string
	}{
		{`{"name":"long"}`, "Skill: long\n\n" + strings.Repeat("a", 40) + "\n[skill continues: 60 more characters; call skill with name \"long\" and offset 40 for the rest]"},
		{`{"name":"long","offset":80}`, "Skill: long\n\n" + strings.Repeat("c", 20)},
	} {
		got, err := tool.Call(context.Background(), []byte(tt.args))
		if err != nil || got != tt.want {
			t.Fatalf("Call(%s) = %q, %v\nwant %q", tt.args, got, err, tt.want)
		}
	}
	for _, bad := range []string{`{"name":"../long"}`, `{"name":"long/SKILL.md"}`, `{"name":"LONG"}`} {
		if _, err := tool.Call(context.Background(), []byte(bad)); err == nil || !strings.Contains(err.Error(), "skill: no skill named") {
			t.Fatalf("Call(%s) err = %v", bad, err)
		}
	}
	if _, err := tool.Call(context.Background(), []byte(`{"name":"long","offset":101}`)); err == nil || !strings.Contains(err.Error(), "offset 101 is past the end of long (100 characters)") {
		t.Fatalf("err = %v", err)
	}
}

// The list in the prompt is bounded.
func TestSkillListBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range MaxListed + 10 {
		name := fmt.Sprintf("s%02d", i)
		writeSkill(t, dir, name, skillFile(name, "Skill number "+name+".", "Body."))
	}
	sec := NewTool(NewLibrary(dir, Options{}), 0).PromptSection(agent.Persona{})
	if !strings.Contains(sec, "- s49: Skill number s49.\n[10 more skills not listed]") || strings.Contains(sec, "s50") {
		t.Fatalf("section:\n%s", sec)
	}
	if n := len([]rune(sec)); n > MaxListChars+600 {
		t.Fatalf("section is %d characters", n)
	}
}
