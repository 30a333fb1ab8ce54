package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// MemoryToolName is the name of the long-term notes tool (agent/tools). When a
// turn offers a tool of this name, the system prompt carries the memory
// guidance (what to save, what never to save).
const MemoryToolName = "memory"

// Long-term notes.
//
// A chat's notes live in the notes store under the scope = the session key
// (memory.Store.AddNote/ListNotes/…). The scope is the session key only: for a
// direct chat that is one person, for a group or thread it is that group or
// thread. Nothing is shared between sessions, so a note saved in one chat is
// never shown in, or found from, another.
//
// Besides the notes the model saves with the memory tool, a session's scope
// holds at most one conversation summary note written by the compactor. Its
// text starts with a marker line (see formatSummaryNote) that records how much
// of the session it covers; the memory tool hides it (IsSummaryNote) and the
// ContextBuilder shows it in its own section.

// NotesSource gives the ContextBuilder the notes of a scope. memory.Store
// implements it.
type NotesSource interface {
	ListNotes(ctx context.Context, scope string) ([]memory.Note, error)
}

// NotesStore is a NotesSource that can also write notes; the compactor needs
// it to keep the conversation summary. memory.Store implements it.
type NotesStore interface {
	NotesSource
	AddNote(ctx context.Context, scope, text string) (memory.Note, error)
	DeleteNote(ctx context.Context, scope string, id uint64) error
}

// sessionMetaReader is implemented by session stores that keep per-session
// counters (memory.Store): the compactor uses them to decide cheaply whether
// the history window is exceeded.
type sessionMetaReader interface {
	Session(ctx context.Context, key string) (memory.SessionMeta, bool, error)
}

// sessionTurnsReader is implemented by session stores that can return a whole
// session turn by turn (memory.Store). The compactor reads it only when it
// compacts.
type sessionTurnsReader interface {
	SessionTurns(ctx context.Context, key string) ([]memory.Turn, error)
}

// summaryPrefix starts the marker line of every summary note.
const summaryPrefix = "[conversation summary "

// IsSummaryNote reports whether a note's text is the compactor's conversation
// summary (not a note the model saved). The memory tool hides such notes.
func IsSummaryNote(text string) bool { return strings.HasPrefix(text, summaryPrefix) }

var summaryHeadRE = regexp.MustCompile(`^\[conversation summary v1 kind=(summary|excerpt) turns=(\d+) messages=(\d+) resets=(\d+) next=([0-9a-f]*)\]\n`)

// Kinds of summary notes.
const (
	summaryKindModel   = "summary" // written by the model
	summaryKindExcerpt = "excerpt" // mechanical, written when summarizing failed
)

// summaryNote is a parsed summary note. It covers the session's oldest
// `messages` stored messages (`turns` turns). resets is the number of
// /reset archives the session had when it was written: after a reset the
// note belongs to an archived conversation and is stale. next fingerprints
// the first message after the covered range ("" if none was kept).
type summaryNote struct {
	id       uint64
	kind     string
	turns    int
	messages int
	resets   int
	next     string
	text     string
	created  time.Time
}

func formatSummaryNote(s summaryNote) string {
	return fmt.Sprintf("[conversation summary v1 kind=%s turns=%d messages=%d resets=%d next=%s]\n%s",
		s.kind, s.turns, s.messages, s.resets, s.next, s.text)
}

func parseSummaryNote(n memory.Note) (summaryNote, bool) {
	m := summaryHeadRE.FindStringSubmatch(n.Text)
	if m == nil {
		return summaryNote{}, false
	}
	turns, err1 := strconv.Atoi(m[2])
	msgs, err2 := strconv.Atoi(m[3])
	resets, err3 := strconv.Atoi(m[4])
	if err1 != nil || err2 != nil || err3 != nil {
		return summaryNote{}, false
	}
	return summaryNote{id: n.ID, kind: m[1], turns: turns, messages: msgs, resets: resets, next: m[5],
		text: n.Text[len(m[0]):], created: n.Created}, true
}

// splitNotes separates the model's notes (oldest first, as stored) from the
// newest valid summary note; every other summary note (older or unreadable)
// is returned in extra so the compactor can remove it.
func splitNotes(notes []memory.Note) (plain []memory.Note, summary *summaryNote, extra []memory.Note) {
	for _, n := range notes {
		if !IsSummaryNote(n.Text) {
			plain = append(plain, n)
			continue
		}
		s, ok := parseSummaryNote(n)
		if !ok {
			extra = append(extra, n)
			continue
		}
		if summary != nil {
			extra = append(extra, memory.Note{ID: summary.id, Scope: n.Scope})
		}
		s2 := s
		summary = &s2
	}
	return plain, summary, extra
}

// fingerprint identifies a stored message well enough to find it again in
// a history window (role, time and text).
func fingerprint(m memory.Message) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s", m.Role, m.Time.UnixNano(), m.Content, m.ToolCallID)
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(h, "\x00%s", tc.ID)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
