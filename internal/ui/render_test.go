package ui

import (
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// The console parses a page at its first request (issue 19: an idle daemon
// holds no templates), so these tests are what finds a broken template.

func TestPagesParse(t *testing.T) {
	ps, err := newPageSet(templateFS)
	if err != nil {
		t.Fatal(err)
	}
	// Every page the handlers render, and the templates live updates
	// render on their own (fragment).
	tests := []struct {
		page      string
		templates []string
	}{
		{"login", []string{"layout"}},
		{"overview", []string{"layout", "live"}},
		{"chat", []string{"layout", "history"}},
		{"sessions", []string{"layout"}},
		{"session", []string{"layout"}},
		{"jobs", []string{"layout"}},
		{"personas", []string{"layout"}},
		{"persona", []string{"layout"}},
		{"config", []string{"layout"}},
		{"pairing", []string{"layout"}},
		{"audit", []string{"layout"}},
		{"approvals", []string{"layout"}},
		{"message", []string{"layout"}},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			tmpl, err := ps.page(tt.page)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tt.templates {
				if tmpl.Lookup(name) == nil {
					t.Errorf("page %s has no template %q", tt.page, name)
				}
			}
		})
	}
	// Pages no handler names yet parse too: every page file is checked.
	for name := range ps.pages {
		if _, err := ps.page(name); err != nil {
			t.Errorf("page %s: %v", name, err)
		}
	}
}

func TestPageErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"templates/layout.html": {Data: []byte(`{{define "layout"}}<main>{{template "body" .}}</main>{{end}}`)},
		"templates/_part.html":  {Data: []byte(`{{define "part"}}p{{end}}`)},
		"templates/good.html":   {Data: []byte(`{{define "body"}}ok {{template "part"}}{{end}}`)},
		"templates/broken.html": {Data: []byte(`{{define "body"}}{{if .X}}unclosed{{end}}`)},
	}
	ps, err := newPageSet(fsys)
	if err != nil {
		t.Fatalf("listing the pages parses nothing, so a broken page cannot fail it: %v", err)
	}
	tests := []struct {
		page    string
		wantErr string // "" = parses
	}{
		{"good", ""},
		{"broken", "template broken"},
		{"missing", "no page missing"},
		{"layout", "no page layout"},
		{"_part", "no page _part"},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			_, err := ps.page(tt.page)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("page %s: %v", tt.page, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("page %s: error %v, want one containing %q", tt.page, err, tt.wantErr)
			}
			// The answer is kept: asking again gives the same.
			_, again := ps.page(tt.page)
			if (err == nil) != (again == nil) {
				t.Fatalf("page %s: first %v, then %v", tt.page, err, again)
			}
		})
	}
}

func TestPageParsedOnceUnderConcurrentRequests(t *testing.T) {
	ps, err := newPageSet(templateFS)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	got := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tmpl, err := ps.page("overview")
			if err != nil {
				t.Error(err)
				return
			}
			var b strings.Builder
			if err := tmpl.ExecuteTemplate(&b, "live", overviewData{}); err != nil {
				t.Error(err)
			}
			got[i] = tmpl
		}()
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if got[i] != got[0] {
			t.Fatalf("request %d got another parse of the page than request 0", i)
		}
	}
}

func TestConversationIDRule(t *testing.T) {
	tests := []struct {
		conv string
		ok   bool
	}{
		{"a", true},
		{strings.Repeat("A", 64), true},
		{strings.Repeat("A", 65), false},
		{"", false},
		{"a b", false},
		{"a/b", false},
		{"Ab_9-z", true},
	}
	for _, tt := range tests {
		if got := validConv(tt.conv); got != tt.ok {
			t.Errorf("validConv(%q) = %v, want %v", tt.conv, got, tt.ok)
		}
	}
}
