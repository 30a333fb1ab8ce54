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
	"time"
	"unicode/utf8"
)

// pageSet is the parsed templates: one per page, each with the layout.
type pageSet struct {
	pages map[string]*template.Template
}

var funcs = template.FuncMap{
	"md":       markdownHTML,
	"time":     fmtTime,
	"dur":      fmtDur,
	"clip":     clip,
	"pretty":   prettyJSON,
	"join":     strings.Join,
	"ago":      func(t time.Time) string { return fmtTime(t) },
	"nonzero":  func(t time.Time) bool { return !t.IsZero() },
	"add":      func(a, b int) int { return a + b },
	"pathname": func(p string) string { return path.Base(p) },
}

func parsePages() (*pageSet, error) {
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	ps := &pageSet{pages: map[string]*template.Template{}}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		partials, _ := fs.Glob(templateFS, "templates/_*.html")
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, append([]string{"templates/layout.html", f}, partials...)...)
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", name, err)
		}
		ps.pages[name] = t
	}
	return ps, nil
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string
	LoggedIn bool
	CSRF     string
	Flash    string
	Data     any
}

// render writes page name with data; code is the HTTP status.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	v := view{Title: name, Nav: name, Data: data}
	if sess := sessionOf(r); sess != nil {
		v.LoggedIn, v.CSRF, v.Flash = true, sess.csrf, s.auth.takeFlash(sess)
	}
	s.renderView(w, code, name, v)
}

func (s *Server) renderView(w http.ResponseWriter, code int, name string, v view) {
	t := s.pages.pages[name]
	if t == nil {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
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
	t := s.pages.pages[page]
	if t == nil {
		return "", fmt.Errorf("no page %s", page)
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
