package tools

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
)

func TestNewAndSchemas(t *testing.T) {
	all, err := New(Options{Location: time.UTC, Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Name() != NameCurrentTime || all[1].Name() != NameWebFetch {
		t.Fatalf("New returned %d tools", len(all))
	}
	examples := map[string]struct{ valid, invalid []string }{
		NameCurrentTime: {
			valid:   []string{`{}`, `{"timezone":"Europe/Berlin"}`},
			invalid: []string{`{"timezone":5}`, `{"zone":"UTC"}`, `[]`, `"UTC"`},
		},
		NameWebFetch: {
			valid:   []string{`{"url":"https://example.com/"}`},
			invalid: []string{`{}`, `{"url":""}`, `{"url":"https://x/","method":"POST"}`, `{"url":"https://x/","body":"a"}`, `{"url":7}`},
		},
	}
	for _, tool := range all {
		t.Run(tool.Name(), func(t *testing.T) {
			if strings.TrimSpace(tool.Description()) == "" {
				t.Error("empty description")
			}
			// The registry the agent uses: compiles the schema and checks
			// every call's arguments against it.
			reg := agent.NewRegistry()
			if err := reg.Register(tool); err != nil {
				t.Fatalf("schema refused: %v", err)
			}
			ex := examples[tool.Name()]
			for _, v := range ex.valid {
				if err := reg.Validate(tool.Name(), json.RawMessage(v)); err != nil {
					t.Errorf("valid args %s rejected: %v", v, err)
				}
			}
			for _, v := range ex.invalid {
				if err := reg.Validate(tool.Name(), json.RawMessage(v)); err == nil {
					t.Errorf("invalid args %s accepted", v)
				}
			}
		})
	}
	if _, err := New(Options{WebFetch: WebFetchConfig{AllowDomains: []string{"http://x"}}}); err == nil ||
		!strings.Contains(err.Error(), `tools: web_fetch: allowed domain "http://x"`) {
		t.Errorf("New with a bad domain: %v", err)
	}
}
