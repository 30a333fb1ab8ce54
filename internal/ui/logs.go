package ui

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/logring"
)

// The Logs page (issue 34): the tail of the daemon's log from its in-memory
// ring (internal/logring, fed by internal/daemon), newest first, at or
// above a level chosen with a GET form, live over Server-Sent Events. The
// daemon scrubs every line of the config's secrets and of URL credentials
// before the ring keeps it and again when the page reads it; here a line is
// text, never markup.

// logsShown bounds the lines the page shows (the ring keeps more).
const logsShown = 500

// logsCoalesce is the least time between two live updates: a burst of
// records becomes one update.
const logsCoalesce = 250 * time.Millisecond

// logLevels are the filter's choices, lowest first.
var logLevels = []struct {
	Name  string
	Level slog.Level
}{{"debug", slog.LevelDebug}, {"info", slog.LevelInfo}, {"warn", slog.LevelWarn}, {"error", slog.LevelError}}

type logsData struct {
	Level  string // the filter: debug, info, warn, error
	Levels []string
	Lines  []logLine
}

type logLine struct {
	Time  time.Time
	Level string // DEBUG, INFO, WARN, ERROR
	Class string // for the level's colour
	Text  string
}

// logLevel reads the level filter (default info); unknown values are info.
func logLevel(r *http.Request) (string, slog.Level) {
	name := strings.ToLower(strings.TrimSpace(r.FormValue("level")))
	for _, l := range logLevels {
		if l.Name == name {
			return l.Name, l.Level
		}
	}
	return "info", slog.LevelInfo
}

func buildLogs(ops Operations, name string, level slog.Level) logsData {
	d := logsData{Level: name}
	for _, l := range logLevels {
		d.Levels = append(d.Levels, l.Name)
	}
	recs := ops.LogTail(level, logsShown)
	d.Lines = make([]logLine, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		d.Lines = append(d.Lines, lineOf(recs[i]))
	}
	return d
}

func lineOf(rec logring.Record) logLine {
	l := logLine{Time: rec.Time, Level: rec.Level.String(), Text: rec.Text}
	switch {
	case rec.Level >= slog.LevelError:
		l.Class = "bad"
	case rec.Level < slog.LevelInfo:
		l.Class = "muted"
	}
	return l
}

func (s *Server) logsPage(w http.ResponseWriter, r *http.Request) {
	ops := s.ops(w, r)
	if ops == nil {
		return
	}
	name, level := logLevel(r)
	s.render(w, r, http.StatusOK, "logs", buildLogs(ops, name, level))
}

// logsStream sends the filtered tail again whenever records arrive (at
// most every logsCoalesce).
func (s *Server) logsStream(w http.ResponseWriter, r *http.Request) {
	ops, ok := s.o.Backend.(Operations)
	if !ok {
		http.NotFound(w, r)
		return
	}
	name, level := logLevel(r)
	sse, ok := s.startSSE(w)
	if !ok {
		return
	}
	for {
		changed := ops.LogChanged() // before reading: no record falls in between
		html, err := s.fragment("logs", "lines", buildLogs(ops, name, level))
		if err != nil {
			s.log.Error("render logs", "err", err)
			return
		}
		if sse.send("logs", html) != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-changed:
		}
		t := time.NewTimer(logsCoalesce)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-s.done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}
