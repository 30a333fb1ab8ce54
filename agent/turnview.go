package agent

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/switchboard-bot/switchboard/memory"
)

// A turn's reads (issue 19). With a store that implements memory.TurnReader
// and keeps the notes too (memory.Store), a turn reads its history, the
// session's counters and its notes in one read transaction; the compactor
// and the notes message work from that view. Otherwise each is read on its
// own, as before.

// viewCompactor is a Compactor that can work from the turn's view (the
// built-in summary compactor); changed reports that it wrote or deleted notes,
// so the view's notes are stale.
type viewCompactor interface {
	compactView(ctx context.Context, key string, v memory.TurnView) (hist []memory.Message, changed bool, err error)
}

// turnReader returns the store's TurnReader when the notes live in the same
// store (so the view's notes are the notes the turn would read), else nil.
func turnReader(o Options) memory.TurnReader {
	tr, ok := o.Sessions.(memory.TurnReader)
	if !ok || !sameObject(o.Sessions, o.Notes) {
		return nil
	}
	return tr
}

// sameObject reports whether a and b are the same pointer.
func sameObject(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer &&
		va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// readContext loads the turn's history (compacted when a Compactor is set)
// and its notes message into t.history and t.notes.
func (t *turn) readContext(ctx context.Context) error {
	key := t.req.SessionKey
	var (
		view *memory.TurnView
		hist []memory.Message
		err  error
	)
	if t.pre != nil {
		view, hist = t.pre, t.pre.History
	} else if t.a.viewer != nil {
		var v memory.TurnView
		if v, err = t.a.viewer.ReadTurn(ctx, key, t.o.MaxHistory); err == nil {
			view, hist = &v, v.History
		}
	} else {
		hist, err = t.o.Sessions.LoadHistory(ctx, key, t.o.MaxHistory)
	}
	if err != nil {
		return fmt.Errorf("agent: load history of %s: %w", key, err)
	}
	hist = sanitizeHistory(hist)
	notesFresh := view != nil
	if t.o.Compactor != nil {
		t.tr.enter(StateCompacting)
		var h []memory.Message
		changed := true
		if vc, ok := t.o.Compactor.(viewCompactor); ok && view != nil {
			v := *view
			v.History = hist
			h, changed, err = vc.compactView(ctx, key, v)
		} else {
			h, err = t.o.Compactor.Compact(ctx, key, hist)
		}
		notesFresh = notesFresh && !changed
		if err != nil {
			t.logger().Warn("history compaction failed; using the history as loaded", slog.String("error", err.Error()))
		} else {
			hist = sanitizeHistory(h)
		}
	}
	t.history = hist
	if notesFresh {
		t.notes = t.a.builder.NotesMessage(view.Notes, hasTool(t.tools, MemoryToolName))
		return nil
	}
	if notes, err := t.a.notesMessage(ctx, key, t.tools); err != nil {
		t.logger().Warn("could not read the chat's notes; answering without them", slog.String("error", err.Error()))
	} else {
		t.notes = notes
	}
	return nil
}

// logger is the Agent's logger with the turn's session and id, made at the
// first message the turn logs.
func (t *turn) logger() *slog.Logger {
	if t.log == nil {
		if !t.a.log.Handler().Enabled(context.Background(), slog.LevelError) {
			return t.a.log // discards everything: nothing to add
		}
		t.log = t.a.log.With(slog.String("session", t.req.SessionKey), slog.String("turn", t.id))
	}
	return t.log
}

// resolvePersona names the turn's persona through req.ResolvePersona, from
// the session's metadata read together with the history; it returns that
// read for readContext (nil without a resolver or a TurnReader: readContext
// reads).
func (a *Agent) resolvePersona(ctx context.Context, req *Request) (*memory.TurnView, error) {
	if req.ResolvePersona == nil {
		return nil, nil
	}
	if a.viewer == nil {
		req.Persona = req.ResolvePersona(ctx, nil)
		return nil, nil
	}
	v, err := a.viewer.ReadTurn(ctx, req.SessionKey, a.o.MaxHistory)
	if err != nil {
		return nil, fmt.Errorf("agent: load history of %s: %w", req.SessionKey, err)
	}
	req.Persona = req.ResolvePersona(ctx, &v.Meta)
	return &v, nil
}
