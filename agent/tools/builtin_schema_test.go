package tools_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/skills"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/heartbeat"
)

var updateSchemas = flag.Bool("update-schemas", false, "rewrite testdata/schemas/*.json from the tools' schemas")

// builtinTools returns every built-in tool the daemon offers the model (MCP
// tools are the servers' own and not listed), built with default options.
func builtinTools(t *testing.T) []agent.Tool {
	t.Helper()
	fetch, err := tools.NewWebFetch(tools.WebFetchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	search, err := tools.NewWebSearch(tools.WebSearchConfig{Provider: tools.ProviderSearXNG, URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return append([]agent.Tool{
		tools.NewCurrentTime(nil, nil),
		fetch,
		search,
		tools.NewMemory(nil, tools.MemoryOptions{}),
		heartbeat.NewScheduleTool(nil),
		heartbeat.NewSendMessageTool(nil, nil, nil, nil),
		skills.NewTool(nil, 0),
		tools.NewSpawn(nil),
		tools.NewSendFile(),
	}, tools.NewFiles(tools.FilesOptions{})...)
}

// TestBuiltinToolSchemasUnchanged: the argument schema every built-in tool
// shows the model (properties in their order, types, descriptions, enums,
// bounds, required, additionalProperties) is the one in
// testdata/schemas/<tool>.json, captured from the hand-written schemas before
// they were generated from the argument structs. Equality is semantic: key
// order inside an object and the order of "required" do not matter; the
// order of the properties does (the model reads them in that order).
func TestBuiltinToolSchemasUnchanged(t *testing.T) {
	for _, tool := range builtinTools(t) {
		t.Run(tool.Name(), func(t *testing.T) {
			path := filepath.Join("testdata", "schemas", tool.Name()+".json")
			got := tool.Schema()
			if *updateSchemas {
				var buf bytes.Buffer
				if err := json.Indent(&buf, got, "", "  "); err != nil {
					t.Fatal(err)
				}
				buf.WriteByte('\n')
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("golden schema: %v (run with -update-schemas to write it)", err)
			}
			if g, w := normalizeSchema(t, got), normalizeSchema(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("schema of %s changed\n got: %s\nwant: %s", tool.Name(), compact(t, got), compact(t, want))
			}
			if g, w := propertyOrder(t, got), propertyOrder(t, want); !slices.Equal(g, w) {
				t.Errorf("property order of %s = %v, want %v", tool.Name(), g, w)
			}
		})
	}
}

// TestMemorySchemaFollowsNoteLimit: the note length the model is told
// (text.maxLength) is the configured limit, not the default.
func TestMemorySchemaFollowsNoteLimit(t *testing.T) {
	for _, limit := range []int{tools.DefaultNoteMaxChars, 120} {
		m := tools.NewMemory(nil, tools.MemoryOptions{NoteMaxChars: limit})
		var s struct {
			Properties map[string]struct {
				MaxLength *int `json:"maxLength"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(m.Schema(), &s); err != nil {
			t.Fatal(err)
		}
		if got := s.Properties["text"].MaxLength; got == nil || *got != limit {
			t.Errorf("NoteMaxChars %d: text.maxLength = %v", limit, got)
		}
	}
}

// TestBuiltinToolArgsValidated: the agent compiles every built-in schema and
// checks the model's arguments against it before the tool runs; what the
// model is told names the bad argument.
func TestBuiltinToolArgsValidated(t *testing.T) {
	reg := agent.NewRegistry()
	for _, tool := range builtinTools(t) {
		if err := reg.Register(tool); err != nil {
			t.Fatalf("register %s: %v", tool.Name(), err)
		}
	}
	long := func(n int) string { return `"` + strings.Repeat("a", n) + `"` }
	cases := []struct {
		tool, args string
		want       string // substring of the error; "" = valid
	}{
		{"current_time", `{}`, ""},
		{"current_time", `{"timezone":"Europe/Berlin"}`, ""},
		{"current_time", `{"timezone":` + long(65) + `}`, "timezone"},
		{"current_time", `{"zone":"UTC"}`, "zone"},
		{"web_fetch", `{"url":"https://example.com/"}`, ""},
		{"web_fetch", `{}`, "url"},
		{"web_fetch", `{"url":""}`, "url"},
		{"web_fetch", `{"url":` + long(4097) + `}`, "url"},
		{"web_search", `{"query":"go","count":3}`, ""},
		{"web_search", `{"count":3}`, "query"},
		{"web_search", `{"query":"go","count":21}`, "count"},
		{"web_search", `{"query":"go","count":0}`, "count"},
		{"web_search", `{"query":"go","count":2.5}`, "count"},
		{"web_search", `{"query":` + long(401) + `}`, "query"},
		{"memory", `{"action":"save","text":"likes tea"}`, ""},
		{"memory", `{"action":"forget","id":3}`, ""},
		{"memory", `{"action":"remember"}`, "action"},
		{"memory", `{"text":"x"}`, "action"},
		{"memory", `{"action":"forget","id":0}`, "id"},
		{"memory", `{"action":"save","text":` + long(501) + `}`, "text"},
		{"memory", `{"action":"search","query":""}`, "query"},
		{"schedule", `{"action":"create","in":"20m","text":"tea"}`, ""},
		{"schedule", `{"action":"create","kind":"alarm"}`, "kind"},
		{"schedule", `{"action":"delete"}`, "action"},
		{"schedule", `{"name":"x"}`, "action"},
		{"schedule", `{"action":"list","every":"1h"}`, "every"},
		{"send_message", `{"text":"hi"}`, ""},
		{"send_message", `{"target":"slack:C1","text":"hi"}`, ""},
		{"send_message", `{"text":""}`, "text"},
		{"send_message", `{"target":"slack:C1"}`, "text"},
		{"skill", `{"name":"deploy"}`, ""},
		{"skill", `{"name":"deploy","offset":3500}`, ""},
		{"skill", `{"name":"deploy","offset":-1}`, "offset"},
		{"skill", `{"name":` + long(65) + `}`, "name"},
		{"skill", `{}`, "name"},
		{"spawn", `{"title":"research","prompt":"find the cheapest flight"}`, ""},
		{"spawn", `{"title":"research","prompt":"find it","tools":["web_*"]}`, ""},
		{"spawn", `{"title":"","prompt":"find it"}`, "title"},
		{"spawn", `{"title":"research"}`, "prompt"},
		{"spawn", `{"title":` + long(81) + `,"prompt":"x"}`, "title"},
		{"spawn", `{"title":"r","prompt":"x","tools":"web_fetch"}`, "tools"},
		{"send_file", `{"path":"reports/q3.pdf"}`, ""},
		{"send_file", `{"path":"reports/q3.pdf","caption":"Q3"}`, ""},
		{"send_file", `{"caption":"Q3"}`, "path"},
		{"send_file", `{"path":"a.txt","caption":` + long(1025) + `}`, "caption"},
		{"send_file", `{"path":"a.txt","to":"slack:C1"}`, "to"},
	}
	for _, c := range cases {
		err := reg.Validate(c.tool, json.RawMessage(c.args))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: valid arguments refused: %v", c.tool, shorten(c.args), err)
		case c.want != "" && err == nil:
			t.Errorf("%s %s: invalid arguments accepted", c.tool, shorten(c.args))
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s %s: error %q does not name %q", c.tool, shorten(c.args), err, c.want)
		}
	}
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// normalizeSchema decodes a schema with every "required" list sorted.
func normalizeSchema(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if l, ok := e.([]any); ok && k == "required" {
					slices.SortFunc(l, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return v
}

// propertyOrder lists the top-level property names in the order they appear.
func propertyOrder(t *testing.T, raw []byte) []string {
	t.Helper()
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
