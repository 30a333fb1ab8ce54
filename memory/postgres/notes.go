package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// AddNote stores text in scope and returns the note with its ID (unique
// across all scopes, so an id from one scope never addresses a note of
// another).
func (s *Store) AddNote(ctx context.Context, scope, text string) (memory.Note, error) {
	if scope == "" {
		return memory.Note{}, fmt.Errorf("memory: add note: empty scope")
	}
	if strings.TrimSpace(text) == "" {
		return memory.Note{}, fmt.Errorf("memory: add note to %s: empty text", scope)
	}
	n := memory.Note{Scope: scope, Text: clean(text), Created: s.now()}
	op := "add note to " + scope
	if err := s.begin(ctx, op); err != nil {
		return memory.Note{}, err
	}
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO notes (scope, text, created) VALUES ($1, $2, $3) RETURNING id`,
		n.Scope, n.Text, n.Created).Scan(&id)
	if err != nil {
		return memory.Note{}, s.wrap(op, err)
	}
	n.ID = uint64(id)
	return n, nil
}

// ListNotes returns the notes of scope, oldest first.
func (s *Store) ListNotes(ctx context.Context, scope string) ([]memory.Note, error) {
	return s.notes(ctx, "list notes of "+scope, scope, func(memory.Note) bool { return true })
}

// SearchNotes returns the notes of scope whose text contains every word of
// query, case-insensitively (substring match per word, Go's case folding as
// in every backend), oldest first. An empty query matches every note.
func (s *Store) SearchNotes(ctx context.Context, scope, query string) ([]memory.Note, error) {
	return s.notes(ctx, "search notes of "+scope, scope, memory.NoteMatcher(query))
}

func (s *Store) notes(ctx context.Context, op, scope string, keep func(memory.Note) bool) ([]memory.Note, error) {
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, notesSQL, scope)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := collectNotes(rows, keep)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// notesSQL selects the notes of scope $1, oldest first.
const notesSQL = `SELECT id, scope, text, created FROM notes WHERE scope = $1 ORDER BY id`

// collectNotes reads notesSQL's rows, the ones keep accepts (never nil).
func collectNotes(rows pgx.Rows, keep func(memory.Note) bool) ([]memory.Note, error) {
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Note, error) {
		var n memory.Note
		var id int64
		err := r.Scan(&id, &n.Scope, &n.Text, &n.Created)
		n.ID, n.Created = uint64(id), n.Created.UTC()
		return n, err
	})
	if err != nil {
		return nil, err
	}
	out := []memory.Note{}
	for _, n := range all {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// DeleteNote removes note id of scope; a note of another scope, or an
// unknown id, yields an error wrapping ErrNotFound.
func (s *Store) DeleteNote(ctx context.Context, scope string, id uint64) error {
	op := fmt.Sprintf("delete note %d of %s", id, scope)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM notes WHERE scope = $1 AND id = $2`, scope, int64(id))
	if err != nil {
		return s.wrap(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("memory: %s: %w", op, memory.ErrNotFound)
	}
	return nil
}
