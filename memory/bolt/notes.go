package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// AddNote stores text in scope and returns the note with its ID (unique across
// all scopes, so an id from one scope never addresses a note of another).
func (s *Store) AddNote(ctx context.Context, scope, text string) (memory.Note, error) {
	if scope == "" {
		return memory.Note{}, fmt.Errorf("memory: add note: empty scope")
	}
	if strings.TrimSpace(text) == "" {
		return memory.Note{}, fmt.Errorf("memory: add note to %s: empty text", scope)
	}
	n := memory.Note{Scope: scope, Text: text, Created: s.now()}
	err := s.update(ctx, "add note to "+scope, func(tx *bbolt.Tx) error {
		root := tx.Bucket(bNotes)
		b, err := root.CreateBucketIfNotExists([]byte(scope))
		if err != nil {
			return fmt.Errorf("notes bucket: %w", err)
		}
		if n.ID, err = root.NextSequence(); err != nil {
			return fmt.Errorf("note sequence: %w", err)
		}
		return putJSON(b, u64(n.ID), n)
	})
	if err != nil {
		return memory.Note{}, err
	}
	return n, nil
}

// ListNotes returns the notes of scope, oldest first.
func (s *Store) ListNotes(ctx context.Context, scope string) ([]memory.Note, error) {
	return s.notes(ctx, "list notes of "+scope, scope, func(memory.Note) bool { return true })
}

// SearchNotes returns the notes of scope whose text contains every word of
// query, case-insensitively (substring match per word), oldest first. An empty
// query matches every note.
func (s *Store) SearchNotes(ctx context.Context, scope, query string) ([]memory.Note, error) {
	return s.notes(ctx, "search notes of "+scope, scope, memory.NoteMatcher(query))
}

func (s *Store) notes(ctx context.Context, op, scope string, keep func(memory.Note) bool) ([]memory.Note, error) {
	var out []memory.Note
	err := s.view(ctx, op, func(tx *bbolt.Tx) error {
		var err error
		out, err = notesTx(tx, scope, keep)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// notesTx returns the notes of scope that keep accepts, oldest first (never nil).
func notesTx(tx *bbolt.Tx, scope string, keep func(memory.Note) bool) ([]memory.Note, error) {
	out := []memory.Note{}
	b := tx.Bucket(bNotes).Bucket([]byte(scope))
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		var n memory.Note
		if err := json.Unmarshal(v, &n); err != nil {
			return fmt.Errorf("decode note %d: %w", fromU64(k), err)
		}
		if keep(n) {
			out = append(out, n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteNote removes note id of scope; a note of another scope, or an unknown
// id, yields an error wrapping ErrNotFound.
func (s *Store) DeleteNote(ctx context.Context, scope string, id uint64) error {
	return s.update(ctx, fmt.Sprintf("delete note %d of %s", id, scope), func(tx *bbolt.Tx) error {
		b := tx.Bucket(bNotes).Bucket([]byte(scope))
		if b == nil || b.Get(u64(id)) == nil {
			return memory.ErrNotFound
		}
		return b.Delete(u64(id))
	})
}
