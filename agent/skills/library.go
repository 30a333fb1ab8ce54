package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bounds of a skills directory.
const (
	// MaxSkills caps the skill folders read; the rest are reported.
	MaxSkills = 200
	// DefaultReloadInterval is how often, at most, the directory is checked
	// for changes.
	DefaultReloadInterval = 2 * time.Second
)

// Options configure a Library.
type Options struct {
	// ReloadInterval is the least time between two checks of the directory
	// for changes (DefaultReloadInterval; negative = check on every use).
	ReloadInterval time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
	// Logger receives a warning per malformed SKILL.md (file:line) and an
	// info record when the skills change; nil discards.
	Logger *slog.Logger
}

// Library is the skills of one directory, re-read when its SKILL.md files
// change. It is safe for concurrent use.
type Library struct {
	dir      string
	interval time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu      sync.Mutex
	checked time.Time
	loaded  bool
	print   string           // fingerprint of the files last read
	skills  []Skill          // sorted by name
	byName  map[string]Skill // the same, by name
	errs    []error          // problems of the last read
}

// NewLibrary returns the library of dir. Nothing is read until first use; a
// missing directory means no skills.
func NewLibrary(dir string, opts Options) *Library {
	l := &Library{dir: dir, interval: opts.ReloadInterval, now: opts.Now, log: opts.Logger}
	if l.interval == 0 {
		l.interval = DefaultReloadInterval
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l
}

// Dir is the directory the library reads.
func (l *Library) Dir() string { return l.dir }

// Skills returns the loaded skills sorted by name, re-reading the directory
// first when it changed (checked at most once per ReloadInterval).
func (l *Library) Skills() []Skill {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refreshLocked()
	return slices.Clone(l.skills)
}

// Get returns the skill named name.
func (l *Library) Get(name string) (Skill, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refreshLocked()
	s, ok := l.byName[name]
	return s, ok
}

// Problems returns the errors of the last read: malformed files
// (*ParseError, with file:line) and unreadable folders.
func (l *Library) Problems() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refreshLocked()
	return slices.Clone(l.errs)
}

func (l *Library) refreshLocked() {
	now := l.now()
	if l.loaded && l.interval > 0 && now.Sub(l.checked) < l.interval {
		return
	}
	l.checked = now
	files, print, scanErr := l.scan()
	if l.loaded && print == l.print {
		return
	}
	skills, errs := loadFiles(files)
	if scanErr != nil {
		errs = append([]error{scanErr}, errs...)
	}
	for _, err := range errs {
		l.log.Warn("skill skipped", "err", err)
	}
	if l.loaded {
		l.log.Info("skills reloaded", "dir", l.dir, "skills", len(skills))
	}
	l.loaded, l.print, l.errs = true, print, errs
	l.skills = skills
	l.byName = make(map[string]Skill, len(skills))
	for _, s := range skills {
		l.byName[s.Name] = s
	}
}

// scan lists the SKILL.md files of the directory (at most MaxSkills) and a
// fingerprint of their names, sizes and modification times.
func (l *Library) scan() (files []string, print string, err error) {
	entries, err := os.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "error", fmt.Errorf("skills: read directory %s: %w", l.dir, err)
	}
	var sb strings.Builder
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if len(files) == MaxSkills {
			err = fmt.Errorf("skills: %s holds more than %d skill folders; the rest are not read", l.dir, MaxSkills)
			break
		}
		file := filepath.Join(l.dir, e.Name(), FileName)
		fi, statErr := os.Stat(file)
		if statErr != nil {
			continue // a folder without SKILL.md is not a skill
		}
		files = append(files, file)
		fmt.Fprintf(&sb, "%s|%d|%d\n", file, fi.Size(), fi.ModTime().UnixNano())
	}
	return files, sb.String(), err
}

// loadFiles parses files; malformed ones are returned as errors and left out.
func loadFiles(files []string) ([]Skill, []error) {
	var (
		skills []Skill
		errs   []error
	)
	for _, file := range files {
		s, err := readSkill(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		skills = append(skills, s)
	}
	slices.SortFunc(skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return skills, errs
}

func readSkill(file string) (Skill, error) {
	f, err := os.Open(file)
	if err != nil {
		return Skill{}, &ParseError{File: file, Msg: "cannot read: " + err.Error()}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return Skill{}, &ParseError{File: file, Msg: "cannot read: " + err.Error()}
	}
	return Parse(file, data)
}
