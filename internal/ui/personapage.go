package ui

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/opfile"
	"github.com/switchboard-bot/switchboard/personas"
)

type personaRow struct {
	personas.Persona
	Builtin bool // served from the embedded defaults (no file in personas.dir)
}

type personasData struct {
	Dir      string
	Personas []personaRow
	Default  string
}

// personaDir is personas.dir, resolved.
func (s *Server) personaDir() string {
	cfg := s.o.Backend.Config()
	return cfg.ResolvePath(cfg.Personas.Dir)
}

func (s *Server) personasPage(w http.ResponseWriter, r *http.Request) {
	res := s.o.Backend.Personas()
	d := personasData{Dir: s.personaDir(), Default: s.o.Backend.Config().Personas.Default}
	for _, n := range res.Names() {
		p, ok := res.Get(n)
		if !ok {
			continue
		}
		d.Personas = append(d.Personas, personaRow{Persona: p, Builtin: !s.inDir(p.File)})
	}
	s.render(w, r, http.StatusOK, "personas", d)
}

// inDir reports whether file is a file of the personas directory.
func (s *Server) inDir(file string) bool {
	if file == "" {
		return false
	}
	rel, err := filepath.Rel(s.personaDir(), file)
	return err == nil && !strings.HasPrefix(rel, "..") && !strings.ContainsRune(rel, filepath.Separator)
}

type personaData struct {
	Name  string
	New   bool
	Text  string
	File  string
	Base  string // hash of the file the editor started from (of nothing: no file yet)
	Error string
}

// newPersonaText is the editor's template for a new persona.
const newPersonaText = `---
description: What this persona is for
language: auto
---
You are ...
`

func (s *Server) personaEdit(w http.ResponseWriter, r *http.Request) {
	name := r.FormValue("name")
	if name == "" {
		s.render(w, r, http.StatusOK, "persona", personaData{New: true, Text: newPersonaText})
		return
	}
	if !personas.ValidName(name) {
		s.notFound(w, r, "Not a persona name.")
		return
	}
	d := personaData{Name: name, File: filepath.Join(s.personaDir(), name+".md")}
	data, err := readPersonaFile(d.File)
	var refused *opfile.Error
	switch {
	case errors.As(err, &refused):
		s.render(w, r, http.StatusUnprocessableEntity, "message", messageData{Title: "Cannot edit " + name,
			Text: d.File + ": " + refused.Error() + ". Replace it with a regular file on the host to edit it here."})
		return
	case err == nil:
		d.Text, d.Base = string(data), hashOf(data)
	case errors.Is(err, fs.ErrNotExist):
		d.Base = hashOf(nil)
		// A built-in: start from its shipped file; saving writes it to the directory.
		def, ok := personas.DefaultFile(name)
		if !ok {
			p, found := s.o.Backend.Personas().Get(name)
			if !found {
				s.notFound(w, r, "No persona "+name+".")
				return
			}
			if def, err = personas.Format(p); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		d.Text = string(def)
	default:
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "persona", d)
}

// personaSave validates and writes a persona file, then reloads. A file that
// does not parse, or names tools that do not exist, is refused with
// file:line and not written.
func (s *Server) personaSave(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	text := strings.ReplaceAll(r.PostFormValue("text"), "\r\n", "\n")
	d := personaData{Name: name, New: r.PostFormValue("new") == "1", Text: text, Base: r.PostFormValue("base")}
	refuse := func(msg string) {
		d.Error = msg
		s.audit(r.Context(), "persona.edit", "", name+" (refused)", clip(500, msg))
		s.render(w, r, http.StatusUnprocessableEntity, "persona", d)
	}
	if !personas.ValidName(name) {
		refuse("The name must be 1-64 characters of a-z, 0-9, _ and - (it becomes the file name).")
		return
	}
	d.File = filepath.Join(s.personaDir(), name+".md")
	if d.New {
		if _, err := os.Stat(d.File); err == nil {
			refuse(fmt.Sprintf("%s already exists: edit it instead.", d.File))
			return
		}
	} else if cur, err := readPersonaFile(d.File); errors.As(err, new(*opfile.Error)) {
		refuse(d.File + ": " + err.Error() + "; nothing was written. Replace it with a regular file on the host first.")
		return
	} else if (err == nil && d.Base != hashOf(cur)) || (err != nil && d.Base != hashOf(nil)) {
		// Another tab (or an editor on the host) saved since this page was
		// loaded: writing would silently drop that save.
		refuse(fmt.Sprintf("%s changed since this page was loaded; nothing was written. Copy your text, reload the page and edit again.", d.File))
		return
	}
	p, err := personas.Parse(d.File, []byte(text))
	if err == nil {
		err = checkTools(s.o.Backend.Config(), p, text)
	}
	if err != nil {
		refuse(errText(err))
		return
	}
	if err := writePersona(d.File, []byte(text)); err != nil {
		s.log.Error("write persona", "file", d.File, "err", err)
		refuse("Could not write " + d.File + ": " + errText(errors.Unwrap(err)))
		return
	}
	s.audit(r.Context(), "persona.edit", "", name, "")
	s.redirect(w, r, "/ui/personas/edit?name="+url.QueryEscape(name), "Saved "+d.File+". "+s.reload(r))
}

// readPersonaFile reads a persona file as the loader does (internal/opfile):
// a regular file inside personas.dir, opened without blocking, at most
// personas.MaxFileSize bytes; anything else is an *opfile.Error.
func readPersonaFile(path string) ([]byte, error) {
	return opfile.ReadFile(path, personas.MaxFileSize)
}

// writePersona writes a persona file atomically (a temporary file starting
// with "." that the loader ignores, then a rename), mode 0644.
func writePersona(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write persona: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".persona-*.md")
	if err != nil {
		return fmt.Errorf("write persona: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write persona: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write persona: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write persona: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write persona: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write persona: %w", err)
	}
	return nil
}

// checkTools reports the tools a persona lists that the config does not
// have, at their line (the check the daemon runs at start and reload).
func checkTools(cfg *config.Config, p personas.Persona, text string) error {
	var errs []error
	for _, t := range p.Tools {
		if msg := cfg.ToolNameProblem(t); msg != "" {
			errs = append(errs, &config.Error{File: p.File, Line: frontLine(text, t), Key: "tools", Msg: "tools: " + msg})
		}
	}
	return errors.Join(errs...)
}

// frontLine is the line of the front matter that mentions word (0 if none).
func frontLine(text, word string) int {
	for i, line := range strings.Split(text, "\n") {
		if i > 0 && strings.TrimSpace(line) == "---" {
			return 0
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t,[]-:\"'", r) }) {
			if f == word {
				return i + 1
			}
		}
	}
	return 0
}
