package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// pageSet is the console's page templates, each with the layout and the
// partials. A page is parsed at its first use, not at start: an idle daemon
// whose console nobody opens keeps none of them (issue 19). TestPagesParse
// parses every page, so a broken template fails the tests, not a request.
type pageSet struct {
	// pages is filled by newPageSet and only read afterwards; each entry
	// parses its page once, safe for concurrent requests.
	pages map[string]func() (*template.Template, error)
}

var funcs = template.FuncMap{
	"md":       markdownHTML,
	"livemd":   liveMarkdown, // chatstream.go
	"time":     fmtTime,
	"dur":      fmtDur,
	"clip":     clip,
	"pretty":   prettyJSON,
	"join":     strings.Join,
	"ago":      func(t time.Time) string { return fmtTime(t) },
	"nonzero":  func(t time.Time) bool { return !t.IsZero() },
	"add":      func(a, b int) int { return a + b },
	"pathname": func(p string) string { return path.Base(p) },
	// usage.go
	"thousands":    thousands,
	"thousandsInt": func(n int) string { return thousands(int64(n)) },
	"money":        money,
	// files.go
	"filesize": fileSize,
}

// newPageSet lists the pages of fsys (templates/*.html; layout.html and
// _*.html partials are not pages) without parsing them.
func newPageSet(fsys fs.FS) (*pageSet, error) {
	files, err := fs.Glob(fsys, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: templates: %w", err)
	}
	partials, err := fs.Glob(fsys, "templates/_*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: templates: %w", err)
	}
	ps := &pageSet{pages: map[string]func() (*template.Template, error){}}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		patterns := append([]string{"templates/layout.html", f}, partials...)
		ps.pages[name] = sync.OnceValues(func() (*template.Template, error) {
			t, err := template.New(name).Funcs(funcs).ParseFS(fsys, patterns...)
			if err != nil {
				return nil, fmt.Errorf("ui: template %s: %w", name, err)
			}
			return t, nil
		})
	}
	return ps, nil
}

// page is the parsed template of page name, parsed now if it was not yet.
func (ps *pageSet) page(name string) (*template.Template, error) {
	parse := ps.pages[name]
	if parse == nil {
		return nil, fmt.Errorf("ui: no page %s", name)
	}
	return parse()
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string
	LoggedIn bool
	CSRF     string
	Flash    string
	Data     any
	// Attention is the navigation's badges (attention.go).
	Attention attention
}

// render writes page name with data; code is the HTTP status.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	v := view{Title: name, Nav: name, Data: data}
	if sess := sessionOf(r); sess != nil {
		v.LoggedIn, v.CSRF, v.Flash = true, sess.csrf, s.auth.takeFlash(sess)
		v.Attention = s.attention(r.Context())
	}
	s.renderView(w, code, name, v)
}

func (s *Server) renderView(w http.ResponseWriter, code int, name string, v view) {
	t, err := s.pages.page(name)
	if err != nil {
		s.log.Error("render page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		s.log.Error("render page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// fragment renders the named template of page into a string (live updates).
func (s *Server) fragment(page, name string, data any) (string, error) {
	t, err := s.pages.page(page)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// redirect ends a POST: flash is shown on the next page.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, to, flash string) {
	if sess := sessionOf(r); sess != nil && flash != "" {
		s.auth.setFlash(sess, flash)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.Round(10 * time.Millisecond).String()
}

// clip shortens s to n runes.
func clip(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// prettyJSON indents a JSON text; anything else is returned as is.
func prettyJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}
