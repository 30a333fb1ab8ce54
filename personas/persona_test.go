package personas

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func f32(v float32) *float32 { return &v }

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		content string
		want    Persona // compared when wantErr == ""
		wantErr string  // substring of the error text, with file:line
	}{
		{
			name: "all keys",
			file: "dir/reporter.md",
			content: "---\nname: reporter\ndescription: Daily reports\nlanguage: English\nmodel: gpt-4o\n" +
				"temperature: 0.3\nmax_tokens: 1200\ntools: [current_time, web_fetch]\ngreeting: |\n  Short.\n  Upbeat.\n---\n\nYou report.\n\nBriefly.\n",
			want: Persona{Name: "reporter", Description: "Daily reports", Language: "English", Model: "gpt-4o",
				Temperature: f32(0.3), MaxTokens: 1200, Tools: []string{"current_time", "web_fetch"},
				Greeting: "Short.\nUpbeat.", Identity: "You report.\n\nBriefly.", File: "dir/reporter.md"},
		},
		{
			name:    "minimal: name from file, tools absent means global list",
			file:    "buddy.md",
			content: "---\ndescription: Casual\n---\nHey there.",
			want:    Persona{Name: "buddy", Description: "Casual", Identity: "Hey there.", File: "buddy.md"},
		},
		{
			name:    "empty tools list means no tools",
			file:    "quiet.md",
			content: "---\ntools: []\n---\nNo tools.\n",
			want:    Persona{Name: "quiet", Tools: []string{}, Identity: "No tools.", File: "quiet.md"},
		},
		{
			name:    "null values mean absent",
			file:    "n.md",
			content: "---\ntools:\ntemperature: ~\nmodel:\n---\nBody\n",
			want:    Persona{Name: "n", Identity: "Body", File: "n.md"},
		},
		{
			name:    "empty front matter, CRLF and BOM",
			file:    "crlf.md",
			content: "\ufeff---\r\n---\r\nLine one\r\nLine two\r\n",
			want:    Persona{Name: "crlf", Identity: "Line one\nLine two", File: "crlf.md"},
		},
		{
			name:    "integer temperature",
			file:    "hot.md",
			content: "---\ntemperature: 1\n---\nx",
			want:    Persona{Name: "hot", Temperature: f32(1), Identity: "x", File: "hot.md"},
		},
		{
			name:    "missing front matter",
			file:    "p.md",
			content: "You are a bot.\n",
			wantErr: `p.md:1: missing front matter`,
		},
		{
			name:    "unclosed front matter",
			file:    "p.md",
			content: "---\ndescription: x\nbody\n",
			wantErr: `p.md:1: front matter is not closed`,
		},
		{
			name:    "bad YAML reports the file line",
			file:    "p.md",
			content: "---\ndescription: ok\nlanguage: [en\n---\nbody\n",
			wantErr: `p.md:3: invalid YAML: did not find expected ',' or ']'`,
		},
		{
			name:    "bad YAML block mapping",
			file:    "p.md",
			content: "---\ndescription: ok\nmodel: gpt\n  extra: 1\n---\nbody\n",
			wantErr: `p.md:4: invalid YAML: mapping values are not allowed in this context`,
		},
		{
			name:    "bad YAML bad indentation of a key",
			file:    "p.md",
			content: "---\ndescription: ok\ntools:\n  - a\n - b\n---\nbody\n",
			wantErr: `p.md:5: invalid YAML: did not find expected key`,
		},
		{
			name:    "bad YAML missing colon",
			file:    "p.md",
			content: "---\na: 1\nb: 2\nc 2\nd: 3\n---\nbody\n",
			wantErr: `p.md:4: invalid YAML: could not find expected ':'`,
		},
		{
			name:    "unknown key",
			file:    "p.md",
			content: "---\ndescription: x\ntemprature: 0.5\n---\nbody\n",
			wantErr: `p.md:3: unknown key "temprature" (known keys: name, description`,
		},
		{
			name:    "duplicate key",
			file:    "p.md",
			content: "---\nmodel: a\ndescription: x\nmodel: b\n---\nbody\n",
			wantErr: `p.md:4: key "model" appears twice (first at line 2)`,
		},
		{
			name:    "bad file name",
			file:    "dir/My Persona.md",
			content: "---\n---\nbody\n",
			wantErr: `dir/My Persona.md: persona name "My Persona" (the file name without .md) must be 1-64 characters of a-z, 0-9, _ and -`,
		},
		{
			name:    "name differs from file name",
			file:    "helper.md",
			content: "---\ndescription: x\nname: assistant\n---\nbody\n",
			wantErr: `helper.md:3: name: "assistant" does not match the file name "helper.md"`,
		},
		{
			name:    "temperature out of range",
			file:    "p.md",
			content: "---\ntemperature: 3.5\n---\nbody\n",
			wantErr: `p.md:2: temperature: expected a number between 0 and 2, got 3.5`,
		},
		{
			name:    "temperature as text",
			file:    "p.md",
			content: "---\ntemperature: warm\n---\nbody\n",
			wantErr: `p.md:2: temperature: expected a number between 0 and 2, got the text "warm"`,
		},
		{
			name:    "negative max_tokens",
			file:    "p.md",
			content: "---\nmax_tokens: -5\n---\nbody\n",
			wantErr: `p.md:2: max_tokens: expected a whole number of 0 or more, got -5`,
		},
		{
			name:    "tools as a string",
			file:    "p.md",
			content: "---\ntools: web_fetch\n---\nbody\n",
			wantErr: `p.md:2: tools: expected a list of tool names`,
		},
		{
			name:    "bad tool name on its own line",
			file:    "p.md",
			content: "---\ntools:\n  - current_time\n  - web fetch\n---\nbody\n",
			wantErr: `p.md:4: tools: "web fetch" is not a tool name`,
		},
		{
			name:    "duplicate tool",
			file:    "p.md",
			content: "---\ntools: [a, a]\n---\nbody\n",
			wantErr: `p.md:2: tools: "a" is listed twice`,
		},
		{
			name:    "description must be one line",
			file:    "p.md",
			content: "---\ndescription: |\n  one\n  two\n---\nbody\n",
			wantErr: `p.md:2: description: must be a single line`,
		},
		{
			name:    "front matter is a list",
			file:    "p.md",
			content: "---\n- a\n- b\n---\nbody\n",
			wantErr: `p.md:2: front matter must be YAML keys`,
		},
		{
			name:    "empty body",
			file:    "p.md",
			content: "---\ndescription: x\n---\n\n  \n",
			wantErr: `p.md:3: the body after the front matter is empty`,
		},
		{
			name:    "invalid UTF-8",
			file:    "p.md",
			content: "---\ndescription: \xff\n---\nbody\n",
			wantErr: `p.md: file is not valid UTF-8`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.file, []byte(tc.content))
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse succeeded with %+v; want error containing %q", got, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %q; want it to contain %q", err, tc.wantErr)
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.File != tc.file {
					t.Fatalf("error %v is not a *ParseError for %s", err, tc.file)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

// TestAgentPersona moved to channels/hub with the conversion to agent.Persona.

func TestFormatRoundTrip(t *testing.T) {
	for _, p := range []Persona{
		{Name: "a", Identity: "Just me."},
		{Name: "b", Description: "d: with colon", Language: "no", Model: "true", Temperature: f32(0.7), MaxTokens: 5,
			Tools: []string{}, Greeting: "line one\nline two", Identity: "---\nnot front matter\n---"},
		{Name: "c", Tools: []string{"x", "y_z"}, Temperature: f32(0), Identity: "# Heading\n\nText."},
	} {
		data, err := Format(p)
		if err != nil {
			t.Fatal(err)
		}
		p.File = p.Name + ".md"
		got, err := Parse(p.File, data)
		if err != nil {
			t.Fatalf("Parse(Format(%s)): %v\n%s", p.Name, err, data)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("round trip of %s:\n%#v\nwant\n%#v\nfile:\n%s", p.Name, got, p, data)
		}
	}
}

func TestBuiltinDefaultsParse(t *testing.T) {
	set := Builtin()
	if got, want := set.Names(), []string{"assistant", "buddy", "reporter"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Builtin names = %v, want %v (a default file failed to parse?)", got, want)
	}
	for _, n := range set.Names() {
		data, _ := DefaultFile(n)
		if _, err := Parse(n+".md", data); err != nil {
			t.Errorf("default %s: %v", n, err)
		}
		p, _ := set.Get(n)
		if p.Description == "" || p.Greeting == "" || len(p.Identity) < 200 {
			t.Errorf("default %s is thin: %+v", n, p)
		}
	}
	r, _ := set.Get("reporter")
	for _, want := range []string{"Headline", "Since yesterday"} {
		if !strings.Contains(r.Identity, want) {
			t.Errorf("reporter identity lacks %q", want)
		}
	}
	b, _ := set.Get("buddy")
	if b.MaxTokens == 0 || b.Tools == nil {
		t.Errorf("buddy should cap tokens and limit tools: %+v", b)
	}
	if a, _ := set.Get("assistant"); a.Tools != nil {
		t.Errorf("assistant should use the global tool list, got %v", a.Tools)
	}
	if set.Default() != "assistant" {
		t.Errorf("Default = %q", set.Default())
	}
}
