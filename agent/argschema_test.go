package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type exampleArgs struct {
	Action string `json:"action" jsonschema:"What to do."`
	Text   string `json:"text,omitempty" jsonschema:"save: the \"fact\" to remember."`
	ID     uint64 `json:"id,omitempty"`
	Tags   []string
}

// TestMustArgsSchema: the schema generated from an argument struct names its
// json fields in order, describes them by their jsonschema tags, requires the
// fields without omitempty, refuses other properties, and carries the
// refinements; the agent validates the model's arguments with it.
func TestMustArgsSchema(t *testing.T) {
	raw := MustArgsSchema[exampleArgs](func(p map[string]*jsonschema.Schema) {
		p["action"].Enum = []any{"save", "list"}
		p["text"].MaxLength = jsonschema.Ptr(5)
		p["id"].Minimum = jsonschema.Ptr(1.0)
	})
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action": map[string]any{"type": "string", "description": "What to do.", "enum": []any{"save", "list"}},
			"text":   map[string]any{"type": "string", "description": `save: the "fact" to remember.`, "maxLength": 5.0},
			"id":     map[string]any{"type": "integer", "minimum": 1.0},
			"Tags":   map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "string"}},
		},
		"required":             []any{"action", "Tags"},
		"additionalProperties": false,
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("schema\n got %s\nwant %s", g, w)
	}
	if i, j := strings.Index(string(raw), `"action"`), strings.Index(string(raw), `"text"`); i < 0 || j < i {
		t.Errorf("properties not in field order: %s", raw)
	}

	sch, err := compileSchema(raw)
	if err != nil {
		t.Fatalf("generated schema does not compile: %v", err)
	}
	for _, c := range []struct{ args, want string }{
		{`{"action":"save","text":"tea","id":2,"Tags":null}`, ""},
		{`{"action":"drop","Tags":[]}`, "/properties/action"},
		{`{"action":"save","text":"too long","Tags":[]}`, "/properties/text"},
		{`{"action":"save","id":0,"Tags":[]}`, "/properties/id"},
		{`{"action":"save","Tags":[],"extra":1}`, "extra"},
		{`{"Tags":[]}`, "action"},
	} {
		err := validateArgs(sch, json.RawMessage(c.args))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s refused: %v", c.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.args, err, c.want)
		}
	}
}

// TestMustArgsSchemaEmptyStruct: a tool without arguments shows an object
// with no properties and accepts only {}.
func TestMustArgsSchemaEmptyStruct(t *testing.T) {
	raw := MustArgsSchema[struct{}](nil)
	if got := string(raw); got != `{"type":"object","properties":{},"additionalProperties":false}` {
		t.Errorf("schema = %s", got)
	}
}

// TestMustArgsSchemaPanics: a refinement that invents a property, or
// arguments that are not a struct, are programming errors caught at once.
func TestMustArgsSchemaPanics(t *testing.T) {
	cases := map[string]func(){
		"refine adds a property": func() {
			MustArgsSchema[exampleArgs](func(p map[string]*jsonschema.Schema) { p["url"] = &jsonschema.Schema{Type: "string"} })
		},
		"refine removes a property": func() {
			MustArgsSchema[exampleArgs](func(p map[string]*jsonschema.Schema) { delete(p, "text") })
		},
		"not a struct":       func() { MustArgsSchema[[]string](nil) },
		"unsupported fields": func() { MustArgsSchema[struct{ F func() }](nil) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Error("no panic")
				} else if !strings.Contains(r.(string), "agent: argument schema") {
					t.Errorf("panic %v", r)
				}
			}()
			f()
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
