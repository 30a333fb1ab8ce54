package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/internal/opfile"
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
	folders, print, scanErr := l.scan()
	if l.loaded && print == l.print {
		return
	}
	skills, errs := l.loadFiles(folders)
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

// scan lists the skill folders of the directory that hold a SKILL.md (at
// most MaxSkills; a folder may be a symlink) and a fingerprint of those
// files' names, sizes and modification times. It only stats, so it cannot
// block on a FIFO; what the files are is checked when they are read.
func (l *Library) scan() (folders []string, print string, err error) {
	entries, err := os.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "error", fmt.Errorf("skills: read directory %s: %w", l.dir, err)
	}
	var sb strings.Builder
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if !e.IsDir() {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			if fi, err := os.Stat(filepath.Join(l.dir, e.Name())); err != nil || !fi.IsDir() {
				continue // a link to a file, or dangling: not a skill folder
			}
		}
		if len(folders) == MaxSkills {
			err = fmt.Errorf("skills: %s holds more than %d skill folders; the rest are not read", l.dir, MaxSkills)
			break
		}
		file := filepath.Join(l.dir, e.Name(), FileName)
		fi, statErr := os.Lstat(file)
		if statErr != nil {
			continue // a folder without SKILL.md is not a skill
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err := os.Stat(file); err == nil {
				fi = target // an edit of the linked file is a change too
			}
		}
		folders = append(folders, e.Name())
		fmt.Fprintf(&sb, "%s|%d|%d|%v\n", file, fi.Size(), fi.ModTime().UnixNano(), fi.Mode().Type())
	}
	return folders, sb.String(), err
}

// loadFiles reads the SKILL.md of each folder; malformed and refused files
// are returned as errors and left out.
func (l *Library) loadFiles(folders []string) ([]Skill, []error) {
	if len(folders) == 0 {
		return nil, nil
	}
	dir, err := opfile.Open(l.dir)
	if err != nil {
		return nil, []error{fmt.Errorf("skills: read directory %s: %w", l.dir, err)}
	}
	defer dir.Close()
	var (
		skills []Skill
		errs   []error
	)
	for _, folder := range folders {
		s, err := readSkill(dir, l.dir, folder)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		skills = append(skills, s)
	}
	slices.SortFunc(skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return skills, errs
}

// readSkill reads folder/SKILL.md through opfile: a regular file inside the
// directory (symlinks that stay inside are followed), opened without
// blocking, at most MaxFileSize bytes.
func readSkill(dir *opfile.Dir, base, folder string) (Skill, error) {
	file := filepath.Join(base, folder, FileName)
	data, err := dir.ReadFile(folder+"/"+FileName, MaxFileSize)
	if err != nil {
		var refused *opfile.Error
		if errors.As(err, &refused) {
			return Skill{}, &ParseError{File: file, Msg: refused.Error()}
		}
		return Skill{}, &ParseError{File: file, Msg: "cannot read: " + err.Error()}
	}
	return Parse(file, data)
}
