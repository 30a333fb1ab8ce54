package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
)

// testReadTurn: a backend that implements memory.TurnReader returns in one
// view exactly what LoadHistory, Session and ListNotes return on their own,
// for a new session, a session whose window is cut, one with notes, and a
// chat with notes but no turns yet.
func (h harness) testReadTurn(t *testing.T) {
	ctx := context.Background()
	s, _, _ := h.openTest(t)
	tr, ok := s.(memory.TurnReader)
	if !ok {
		t.Skip("this backend reads a turn's history, session and notes with separate calls (no memory.TurnReader)")
	}
	const key, other = "slack:T1:C9", "slack:T1:C10"
	for i := range 4 {
		mustNo(t, s.AppendTurn(ctx, key, memory.Turn{ID: "t" + string(rune('a'+i)), Messages: []memory.Message{
			{Role: memory.RoleUser, Content: "question"}, {Role: memory.RoleAssistant, Content: "answer"}}}))
	}
	_, err := s.AddNote(ctx, key, "likes tea")
	mustNo(t, err)
	_, err = s.AddNote(ctx, other, "not this chat's")
	mustNo(t, err)
	for _, tc := range []struct {
		key   string
		limit int
	}{{key, 0}, {key, 3}, {key, 100}, {"slack:T1:new", 10}, {other, 10}} {
		v, err := tr.ReadTurn(ctx, tc.key, tc.limit)
		mustNo(t, err)
		hist, err := s.LoadHistory(ctx, tc.key, tc.limit)
		mustNo(t, err)
		meta, found, err := s.Session(ctx, tc.key)
		mustNo(t, err)
		notes, err := s.ListNotes(ctx, tc.key)
		mustNo(t, err)
		if !reflect.DeepEqual(v.History, hist) || v.Found != found || !reflect.DeepEqual(v.Meta, meta) ||
			!reflect.DeepEqual(v.Notes, notes) {
			t.Errorf("ReadTurn(%s, %d) = %+v\nseparate reads: history %+v, meta %+v (found %v), notes %+v",
				tc.key, tc.limit, v, hist, meta, found, notes)
		}
	}
}
