package heartbeat

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

func TestParseGreeting(t *testing.T) {
	cases := []struct {
		in    string
		greet bool
		msg   string
	}{
		{`{"action":"greet","message":"Morning, Anna! How did the talk go?"}`, true, "Morning, Anna! How did the talk go?"},
		{"```json\n{\"action\": \"greet\", \"message\": \"Hi!\"}\n```", true, "Hi!"},
		{"Sure, here it is:\n{\"action\":\"greet\",\"message\":\"Evening!\"}\nHope that works.", true, "Evening!"},
		{`{"action":"skip","reason":"they said they are busy"}`, false, ""},
		{`{"action":"SKIP"}`, false, ""},
		{`{"action":"greet","message":""}`, false, ""},
		{`{"action":"greet","message":"HEARTBEAT_OK"}`, false, ""},
		{`{"action":"dance","message":"x"}`, false, ""},
		{"HEARTBEAT_OK", false, ""},
		{"heartbeat_ok", false, ""},
		{"NO_REPLY", false, ""},
		{"[SILENT]", false, ""},
		{"", false, ""},
		{"   \n ", false, ""},
		{`{"action":"greet","message":`, false, ""},
		{"```\nnot closed", false, ""},
		{"Good evening! Did the plants survive the heat?", true, "Good evening! Did the plants survive the heat?"},
		{"  Hey there 👋  ", true, "Hey there 👋"},
	}
	for _, tc := range cases {
		g := parseGreeting(tc.in)
		if g.Greet != tc.greet || g.Message != tc.msg {
			t.Errorf("parseGreeting(%q) = %+v, want greet %v %q", tc.in, g, tc.greet, tc.msg)
		}
		if !g.Greet && g.Reason == "" {
			t.Errorf("parseGreeting(%q): a skip without a reason", tc.in)
		}
	}
}

func FuzzParseGreeting(f *testing.F) {
	for _, s := range []string{`{"action":"greet","message":"hi"}`, "```json\n{}\n```", "HEARTBEAT_OK", "hello", `{"action":"skip"}`, "{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g := parseGreeting(s)
		if g.Greet {
			if strings.TrimSpace(g.Message) == "" || isStatusToken(g.Message) {
				t.Fatalf("parseGreeting(%q) would deliver %q", s, g.Message)
			}
		} else if g.Reason == "" {
			t.Fatalf("parseGreeting(%q): skip without reason", s)
		}
	})
}

func TestBuildInstruction(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	now := time.Date(2025, 4, 2, 19, 15, 0, 0, loc)
	text := buildInstruction(greetingInput{
		UserName: "Bo", Now: now, LastUser: now.Add(-26 * time.Hour), Hints: "Be brief; use their first name.",
		Notes: []memory.Note{{Text: "prefers tea over coffee"}},
		History: []memory.Message{
			{Role: memory.RoleUser, Name: "Bo", Content: "I have an exam on Friday"},
			{Role: memory.RoleTool, Content: "tool output must not appear"},
			{Role: memory.RoleAssistant, Content: "Good luck!"},
		},
	})
	for _, want := range []string{"Bo", "evening", "about 26 hours ago", "Be brief", "prefers tea", "exam on Friday", "you: Good luck!", `{"action":"skip"`} {
		if !strings.Contains(text, want) {
			t.Errorf("instruction lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "tool output") {
		t.Errorf("tool results leaked into the instruction:\n%s", text)
	}
	never := buildInstruction(greetingInput{Now: now})
	if !strings.Contains(never, "have not written") {
		t.Errorf("a chat without user messages: %s", never)
	}
}
