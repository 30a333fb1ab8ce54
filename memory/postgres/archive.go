package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// ResetSession moves the session's live turns into a new archive (readable
// with ArchivedSessions / LoadArchive) and leaves a fresh, empty session that
// keeps the persona binding and the list of archives, in one transaction.
// Resetting a session without turns, or one that does not exist, does
// nothing.
func (s *Store) ResetSession(ctx context.Context, key string) error {
	if key == "" {
		return errEmptyKey("reset session")
	}
	now := s.now()
	return s.tx(ctx, "reset session "+key, func(tx pgx.Tx) error {
		var sessionID int64
		var seq int
		err := tx.QueryRow(ctx, `SELECT id, archive_seq FROM sessions WHERE key = $1 FOR UPDATE`, key).Scan(&sessionID, &seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		var live bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM turns WHERE session_id = $1 AND archive_id IS NULL)`,
			sessionID).Scan(&live); err != nil {
			return err
		}
		if !live {
			return nil
		}
		meta, err := scanMeta(tx.QueryRow(ctx, `SELECT `+metaColumns+` FROM sessions s WHERE s.id = $1`, sessionID))
		if err != nil {
			return fmt.Errorf("read session: %w", err)
		}
		metaJSON, err := json.Marshal(meta)
		if err != nil {
			return fmt.Errorf("encode archived meta: %w", err)
		}
		seq++
		name := fmt.Sprintf("%04d-%s", seq, now.UTC().Format("20060102T150405Z"))
		var archiveID int64
		if err := tx.QueryRow(ctx, `INSERT INTO archives (session_id, name, archived, meta) VALUES ($1, $2, $3, $4) RETURNING id`,
			sessionID, name, now, string(metaJSON)).Scan(&archiveID); err != nil {
			return fmt.Errorf("archive %s: %w", name, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE turns SET archive_id = $2 WHERE session_id = $1 AND archive_id IS NULL`,
			sessionID, archiveID); err != nil {
			return fmt.Errorf("move turns to archive: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET archive_seq = $2, created = $3, updated = $3, last_user_message = NULL,
			turns = 0, messages = 0, prompt_tokens = 0, completion_tokens = 0, total_tokens = 0, last_turn_id = ''
			WHERE id = $1`, sessionID, seq, now)
		return err
	})
}

type archiveRow struct {
	id   int64
	info memory.ArchiveInfo
}

func scanArchive(r pgx.CollectableRow) (archiveRow, error) {
	var a archiveRow
	var meta []byte
	if err := r.Scan(&a.id, &a.info.ID, &a.info.Archived, &meta); err != nil {
		return a, err
	}
	a.info.Archived = a.info.Archived.UTC()
	if err := json.Unmarshal(meta, &a.info.Meta); err != nil {
		return a, fmt.Errorf("decode archive %s: %w", a.info.ID, err)
	}
	return a, nil
}

// archives lists the archives of session key (name = "" for all), oldest
// first.
func archives(ctx context.Context, q querier, key, name string) ([]archiveRow, error) {
	rows, err := q.Query(ctx, `SELECT a.id, a.name, a.archived, a.meta FROM archives a JOIN sessions s ON s.id = a.session_id
		WHERE s.key = $1 AND ($2 = '' OR a.name = $2) ORDER BY a.id`, key, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanArchive)
}

// ArchivedSessions lists the archives of a session, oldest first.
func (s *Store) ArchivedSessions(ctx context.Context, key string) ([]memory.ArchiveInfo, error) {
	op := "list archives of " + key
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := archives(ctx, s.pool, key, "")
	if err != nil {
		return nil, s.wrap(op, err)
	}
	var out []memory.ArchiveInfo
	for _, a := range rows {
		out = append(out, a.info)
	}
	return out, nil
}

// loadArchives reads the archives of key (name "" = all) with their turns.
func loadArchives(ctx context.Context, q querier, key, name string) ([]memory.Archive, error) {
	rows, err := archives(ctx, q, key, name)
	if err != nil {
		return nil, err
	}
	var out []memory.Archive
	for _, a := range rows {
		turns, err := queryTurns(ctx, q, `WHERE t.archive_id = $1`, a.id)
		if err != nil {
			return nil, err
		}
		out = append(out, memory.Archive{ArchiveInfo: a.info, Turns: turns})
	}
	return out, nil
}

// LoadArchive reads one archive of a session with all its turns and
// messages. An unknown id yields an error wrapping ErrNotFound.
func (s *Store) LoadArchive(ctx context.Context, key, id string) (memory.Archive, error) {
	op := "load archive " + id + " of " + key
	if err := s.begin(ctx, op); err != nil {
		return memory.Archive{}, err
	}
	if id == "" {
		return memory.Archive{}, fmt.Errorf("memory: %s: %w", op, memory.ErrNotFound)
	}
	var out []memory.Archive
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = loadArchives(ctx, tx, key, id)
		return err
	})
	if err != nil {
		return memory.Archive{}, s.wrap(op, err)
	}
	if len(out) == 0 {
		return memory.Archive{}, fmt.Errorf("memory: %s: %w", op, memory.ErrNotFound)
	}
	return out[0], nil
}

// readTx runs fn in a read-only repeatable-read transaction: one snapshot
// for reads that span several statements.
func (s *Store) readTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// ExportSession writes the session (metadata, turns with their messages and
// every archive) as one indented JSON document (memory.SessionExport), read
// from one snapshot. An unknown session yields an error wrapping ErrNotFound.
func (s *Store) ExportSession(ctx context.Context, key string, w io.Writer) error {
	op := "export session " + key
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	doc := memory.SessionExport{Format: memory.ExportFormat, Exported: s.now()}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		doc.Meta, err = scanMeta(tx.QueryRow(ctx, `SELECT `+metaColumns+` FROM sessions s WHERE s.key = $1`, key))
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.ErrNotFound
		}
		if err != nil {
			return err
		}
		if doc.Turns, err = queryTurns(ctx, tx, `JOIN sessions s ON s.id = t.session_id WHERE s.key = $1 AND t.archive_id IS NULL`, key); err != nil {
			return err
		}
		doc.Archives, err = loadArchives(ctx, tx, key, "")
		return err
	})
	if err != nil {
		return s.wrap(op, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("memory: %s: encode: %w", op, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("memory: %s: write: %w", op, err)
	}
	return nil
}

// MoveSession renames a session (its turns, archives, notes and workspace
// files) from one key to another in one transaction — for a Telegram group
// upgraded to a supergroup, whose chat id changes. It fails if the new key
// already has a session (or notes or files, when the old key has them too);
// moving a session that does not exist is a no-op.
func (s *Store) MoveSession(ctx context.Context, from, to string) error {
	if from == to {
		return nil
	}
	return s.tx(ctx, "move session", func(tx pgx.Tx) error {
		var fromSession, toSession, fromNotes, toNotes bool
		err := tx.QueryRow(ctx, `SELECT
				EXISTS (SELECT 1 FROM sessions WHERE key = $1), EXISTS (SELECT 1 FROM sessions WHERE key = $2),
				EXISTS (SELECT 1 FROM notes WHERE scope = $1), EXISTS (SELECT 1 FROM notes WHERE scope = $2)`,
			from, to).Scan(&fromSession, &toSession, &fromNotes, &toNotes)
		if err != nil {
			return err
		}
		if fromSession && toSession {
			return fmt.Errorf("sessions %q already exists", to)
		}
		if fromNotes && toNotes {
			return fmt.Errorf("notes %q already exists", to)
		}
		if fromSession {
			if _, err := tx.Exec(ctx, `UPDATE sessions SET key = $2 WHERE key = $1`, from, to); err != nil {
				return fmt.Errorf("rename session: %w", err)
			}
		}
		if fromNotes {
			if _, err := tx.Exec(ctx, `UPDATE notes SET scope = $2 WHERE scope = $1`, from, to); err != nil {
				return fmt.Errorf("move notes: %w", err)
			}
		}
		return moveFilesTx(ctx, tx, from, to)
	})
}
