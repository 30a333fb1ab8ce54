package config

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher calls a function when watched files change. It watches the
// directories that hold them (not the files), so editors that save by writing
// a temp file and renaming it over the original are seen, and it debounces
// bursts of events into one call.
type Watcher struct {
	w        *fsnotify.Watcher
	debounce time.Duration
	log      *slog.Logger
	match    func(path string) bool
}

// NewWatcher watches the given files (their directories) and directories
// (everything inside). debounce <= 0 means 250ms.
func NewWatcher(files, dirs []string, debounce time.Duration, log *slog.Logger) (*Watcher, error) {
	if debounce <= 0 {
		debounce = 250 * time.Millisecond
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch config: %w", err)
	}
	wanted := map[string]bool{}
	watchDirs := map[string]bool{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			fw.Close()
			return nil, fmt.Errorf("watch %s: %w", f, err)
		}
		wanted[abs] = true
		watchDirs[filepath.Dir(abs)] = true
	}
	whole := map[string]bool{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			fw.Close()
			return nil, fmt.Errorf("watch %s: %w", d, err)
		}
		whole[abs] = true
		watchDirs[abs] = true
	}
	for d := range watchDirs {
		if err := fw.Add(d); err != nil {
			log.Warn("cannot watch directory; edits there need /reload or SIGHUP", "dir", d, "err", err)
		}
	}
	match := func(p string) bool {
		return wanted[p] || whole[filepath.Dir(p)]
	}
	return &Watcher{w: fw, debounce: debounce, log: log, match: match}, nil
}

// Run calls onChange (from this goroutine) after each debounced burst of
// changes until ctx is done, then closes the watcher.
func (w *Watcher) Run(ctx context.Context, onChange func()) {
	defer w.w.Close()
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			abs, err := filepath.Abs(ev.Name)
			if err != nil || !w.match(abs) || ev.Op == fsnotify.Chmod {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(w.debounce)
			} else {
				timer.Reset(w.debounce)
			}
			fire = timer.C
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			w.log.Warn("config watcher", "err", err)
		case <-fire:
			fire = nil
			onChange()
		}
	}
}
