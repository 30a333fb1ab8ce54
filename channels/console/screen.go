package console

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
)

// maxHeldLogs bounds the log output a Screen holds back while an answer line
// is being written; beyond it log lines are dropped and counted.
const maxHeldLogs = 256 << 10

// Screen keeps the console's answers and the daemon's log lines from tearing
// each other when both reach the same terminal (stdout and stderr of one
// tty, or `2>&1` into one file).
//
// Answers are written with Write (the Terminal does that); log lines go
// through the writer Logs returns. A log line never lands inside an answer
// line: while an answer line is unfinished (a streamed answer), log lines are
// held and written as soon as the line ends. When the unfinished line is only
// the prompt, on a terminal the prompt is erased, the log line written and the
// prompt shown again; elsewhere the prompt line is ended first.
type Screen struct {
	mu      sync.Mutex
	out     io.Writer
	tty     bool
	partial bool   // out's current line is unfinished
	prompt  string // the unfinished line is exactly this prompt ("" = not just a prompt)
	held    []heldLog
	size    int // bytes held
	dropped int // log lines dropped because the hold was full
}

type heldLog struct {
	w io.Writer
	p []byte
}

// NewScreen returns a Screen writing answers to out. tty says that out is an
// interactive terminal (the prompt may then be erased and redrawn).
func NewScreen(out io.Writer, tty bool) *Screen {
	if out == nil {
		out = os.Stdout
	}
	return &Screen{out: out, tty: tty}
}

// TTY reports whether the screen is an interactive terminal.
func (s *Screen) TTY() bool { return s.tty }

// Write writes answer text. When it ends a line, held log lines follow.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(p)
}

func (s *Screen) writeLocked(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := s.out.Write(p)
	s.prompt = ""
	s.partial = p[len(p)-1] != '\n'
	if !s.partial {
		s.flushLocked()
	}
	return n, err
}

// Prompt shows the prompt p at the start of a line.
func (s *Screen) Prompt(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partial {
		_, _ = s.writeLocked([]byte("\n"))
	}
	_, _ = s.out.Write([]byte(p))
	s.partial, s.prompt = p != "", p
}

// Logs returns a writer for log output to w (usually stderr) that never
// tears an answer line. Each Write should be one or more whole lines, as
// slog handlers write them.
func (s *Screen) Logs(w io.Writer) io.Writer { return logWriter{s: s, w: w} }

type logWriter struct {
	s *Screen
	w io.Writer
}

func (l logWriter) Write(p []byte) (int, error) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.partial:
		return l.w.Write(p)
	case s.prompt != "" && s.tty:
		prompt := s.prompt
		_, _ = io.WriteString(s.out, "\r\x1b[K") // erase the prompt
		n, err := l.w.Write(p)
		_, _ = io.WriteString(s.out, prompt)
		return n, err
	case s.prompt != "":
		prompt := s.prompt
		_, _ = io.WriteString(s.out, "\n")
		n, err := l.w.Write(p)
		_, _ = io.WriteString(s.out, prompt)
		return n, err
	}
	// An answer line is being written: hold the log line until it ends.
	if s.size+len(p) > maxHeldLogs {
		s.dropped++
		return len(p), nil
	}
	s.held = append(s.held, heldLog{w: l.w, p: bytes.Clone(p)})
	s.size += len(p)
	return len(p), nil
}

// flushLocked writes the held log lines (the answer line just ended).
func (s *Screen) flushLocked() {
	var last io.Writer
	for _, h := range s.held {
		_, _ = h.w.Write(h.p)
		last = h.w
	}
	if s.dropped > 0 && last != nil {
		fmt.Fprintf(last, "(%d log lines dropped while an answer was printed)\n", s.dropped)
	}
	s.held, s.size, s.dropped = nil, 0, 0
}

// IsTerminal reports whether f is an *os.File on a character device: a
// terminal (or /dev/null, where a prompt is harmless).
func IsTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok || file == nil {
		return false
	}
	fi, err := file.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Break ends an unfinished answer line (and writes the log lines held for
// it), so that a notice for the operator shows at once, e.g. on Ctrl-C.
func (s *Screen) Break() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partial {
		_, _ = s.writeLocked([]byte("\n"))
	}
}
