package personas

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/opfile"
)

// DefaultName is the persona a Set falls back to when it holds one by that
// name and no other default was chosen.
const DefaultName = "assistant"

// Set is an immutable collection of personas. The zero value and nil are
// empty sets. Methods return copies, so callers cannot change a Set.
type Set struct {
	byName map[string]Persona
	names  []string // sorted
	def    string
}

// NewSet builds a Set from personas (for tests and tools that build
// personas in code). Invalid or duplicate names are errors.
func NewSet(ps ...Persona) (*Set, error) {
	s := &Set{byName: make(map[string]Persona, len(ps))}
	for _, p := range ps {
		if !ValidName(p.Name) {
			return nil, fmt.Errorf("personas: invalid persona name %q", truncate(p.Name, 60))
		}
		if _, dup := s.byName[p.Name]; dup {
			return nil, fmt.Errorf("personas: persona %q given twice", p.Name)
		}
		s.byName[p.Name] = p.clone()
		s.names = append(s.names, p.Name)
	}
	sort.Strings(s.names)
	return s, nil
}

// Load reads every *.md file of dir (not its subdirectories; names starting
// with "." are ignored). Only regular files inside dir are read
// (internal/opfile): opened without blocking, at most MaxFileSize bytes, and
// through symlinks only while they stay inside dir; a FIFO, device or
// socket, a larger file or a symlink that leads out of dir is reported and
// skipped. A file that cannot be read or parsed is reported in the returned
// errors (each names the file, and the line where there is one; parse
// errors and refusals are *ParseError) and skipped; the others load. The
// Set is never nil: a missing directory yields an empty Set and one error.
func Load(dir string) (*Set, []error) {
	s := &Set{byName: map[string]Persona{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s, []error{fmt.Errorf("personas: read directory %s: %w", dir, err)}
	}
	root, err := opfile.Open(dir)
	if err != nil {
		return s, []error{fmt.Errorf("personas: read directory %s: %w", dir, err)}
	}
	defer root.Close()
	var errs []error
	for _, e := range entries { // ReadDir sorts by file name
		name := e.Name()
		if strings.HasPrefix(name, ".") || filepath.Ext(name) != ".md" || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, name)
		if e.Type()&fs.ModeSymlink != 0 {
			if info, err := os.Stat(path); err == nil && info.IsDir() {
				continue // a link to a directory: subdirectories are not read
			}
		}
		data, err := root.ReadFile(name, MaxFileSize)
		if err != nil {
			var refused *opfile.Error
			if errors.As(err, &refused) {
				errs = append(errs, &ParseError{File: path, Msg: refused.Error()})
			} else {
				errs = append(errs, fmt.Errorf("personas: read %s: %w", path, err))
			}
			continue
		}
		p, err := Parse(path, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.byName[p.Name] = p
		s.names = append(s.names, p.Name)
	}
	sort.Strings(s.names)
	return s, errs
}

// Builtin returns the embedded default personas (assistant, reporter,
// buddy) as a Set, with File set to "<name>.md".
func Builtin() *Set {
	s := &Set{byName: map[string]Persona{}}
	entries, _ := fs.ReadDir(defaultFiles, ".")
	for _, e := range entries {
		path := e.Name()
		data, err := fs.ReadFile(defaultFiles, path)
		if err != nil {
			continue
		}
		p, err := Parse(path, data)
		if err != nil { // TestBuiltinDefaultsParse keeps this from happening
			continue
		}
		s.byName[p.Name] = p
		s.names = append(s.names, p.Name)
	}
	sort.Strings(s.names)
	return s
}

// Get returns the persona called name.
func (s *Set) Get(name string) (Persona, bool) {
	if s == nil {
		return Persona{}, false
	}
	p, ok := s.byName[name]
	if !ok {
		return Persona{}, false
	}
	return p.clone(), true
}

// Has reports whether the Set holds a persona called name.
func (s *Set) Has(name string) bool {
	if s == nil {
		return false
	}
	_, ok := s.byName[name]
	return ok
}

// Names returns the persona names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s.names)
}

// Len is the number of personas.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// Default returns the name of the Set's default persona: the one chosen
// with WithDefault, else "assistant" if present, else the first name in
// sorted order; "" for an empty Set.
func (s *Set) Default() string {
	switch {
	case s == nil || len(s.names) == 0:
		return ""
	case s.def != "":
		return s.def
	case s.Has(DefaultName):
		return DefaultName
	}
	return s.names[0]
}

// WithDefault returns a copy of s whose default persona is name (which
// must exist).
func (s *Set) WithDefault(name string) (*Set, error) {
	if !s.Has(name) {
		return nil, fmt.Errorf("personas: default persona %q: %w", name, ErrUnknownPersona)
	}
	return &Set{byName: s.byName, names: s.names, def: name}, nil
}

// CheckRules reports the personas named by the selection rules
// (personas.by_target, personas.by_channel, personas.default) that the Set
// does not hold, one error per reference, in a stable order. For
// `switchboard doctor`, config validation and reload logs.
func (s *Set) CheckRules(byTarget, byChannel map[string]string, def string) []error {
	var errs []error
	check := func(where, name string) {
		if !s.Has(name) {
			errs = append(errs, fmt.Errorf("%s: %w %q (available: %s)", where, ErrUnknownPersona, name, strings.Join(s.Names(), ", ")))
		}
	}
	if def != "" {
		check("personas.default", def)
	}
	for _, k := range sortedKeys(byTarget) {
		check("personas.by_target."+k, byTarget[k])
	}
	for _, k := range sortedKeys(byChannel) {
		check("personas.by_channel."+k, byChannel[k])
	}
	return errs
}

// CheckTools reports persona tool allowlists that name tools not in known
// (the registered tools), one error per unknown tool.
func (s *Set) CheckTools(known []string) []error {
	var errs []error
	for _, n := range s.Names() {
		p := s.byName[n]
		for _, t := range p.Tools {
			if !slices.Contains(known, t) {
				errs = append(errs, fmt.Errorf("%s: tools: unknown tool %q (known: %s)", p.File, t, strings.Join(known, ", ")))
			}
		}
	}
	return errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ErrUnknownPersona is wrapped by errors about a persona name that the
// current Set does not hold.
var ErrUnknownPersona = errors.New("unknown persona")
