package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// The workspace (memory.Workspace) is the table workspace_files (migration
// 0003): one row a file, keyed (chat, path), content as bytea. A change takes
// the chat's transaction-scoped advisory lock first, so two replicas (or a
// turn and a background task) changing one chat's files serialize, and the
// bounds checked against the rows the transaction reads hold for what it
// commits. Reads take no lock.

// lockWorkspaceSQL serializes changes of one chat's files ($1 the chat).
const lockWorkspaceSQL = `SELECT pg_advisory_xact_lock(hashtextextended('switchboard.workspace:' || $1, 0))`

// ListFiles returns chat's file records ordered by path (memory.Workspace).
func (s *Store) ListFiles(ctx context.Context, chat string) ([]memory.FileInfo, error) {
	op := "list files of " + chat
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	out, err := listFiles(ctx, s.pool, chat)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

func listFiles(ctx context.Context, q querier, chat string) ([]memory.FileInfo, error) {
	rows, err := q.Query(ctx, `SELECT path, size, sha256, modified, mode FROM workspace_files
		WHERE chat = $1 ORDER BY path`, chat)
	if err != nil {
		return nil, err
	}
	var out []memory.FileInfo
	for rows.Next() {
		var fi memory.FileInfo
		var mode int32
		if err := rows.Scan(&fi.Path, &fi.Size, &fi.SHA256, &fi.Modified, &mode); err != nil {
			rows.Close()
			return nil, err
		}
		fi.Modified = fi.Modified.UTC()
		fi.Mode = fs.FileMode(mode)
		out = append(out, fi)
	}
	return out, rows.Err()
}

// ReadFile returns one file's content and record (memory.Workspace).
func (s *Store) ReadFile(ctx context.Context, chat, path string) ([]byte, memory.FileInfo, error) {
	op := "read file " + path + " of " + chat
	if err := s.begin(ctx, op); err != nil {
		return nil, memory.FileInfo{}, err
	}
	fi := memory.FileInfo{Path: path}
	var mode int32
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT size, sha256, modified, mode, content FROM workspace_files
		WHERE chat = $1 AND path = $2`, chat, path).Scan(&fi.Size, &fi.SHA256, &fi.Modified, &mode, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, memory.FileInfo{}, fmt.Errorf("memory: %s: %w", op, memory.NotFoundFile(path))
	}
	if err != nil {
		return nil, memory.FileInfo{}, s.wrap(op, err)
	}
	fi.Modified = fi.Modified.UTC()
	fi.Mode = fs.FileMode(mode)
	if data == nil {
		data = []byte{}
	}
	return data, fi, nil
}

// ApplyFiles applies change to chat's files in one transaction after
// checking every bound against the resulting state (memory.Workspace).
func (s *Store) ApplyFiles(ctx context.Context, chat string, change memory.WorkspaceChange, limits memory.WorkspaceLimits) error {
	if chat == "" {
		return errEmptyKey("apply files")
	}
	change, err := memory.PrepareChange(change)
	if err != nil {
		return err
	}
	now := s.now()
	var refused error
	err = s.tx(ctx, "apply files of "+chat, func(tx pgx.Tx) error {
		var err error
		refused, err = applyFilesTx(ctx, tx, chat, change, limits, now)
		if err == nil && refused != nil {
			err = refused // roll back (nothing was written)
		}
		return err
	})
	if refused != nil {
		return refused
	}
	return err
}

// applyTurnFiles applies a turn's Files inside the turn's commit; a change
// that is invalid or no longer fits is dropped (memory/workspace.go), only a
// database failure is an error.
func applyTurnFiles(ctx context.Context, tx pgx.Tx, key string, turn memory.Turn, now time.Time) error {
	if turn.Files.Empty() {
		return nil
	}
	change, err := memory.PrepareChange(*turn.Files)
	if err != nil {
		return nil
	}
	chat := key
	if turn.FilesOf != "" {
		chat = turn.FilesOf
	}
	_, err = applyFilesTx(ctx, tx, chat, change, turn.FileLimits, now)
	return err
}

// applyFilesTx locks chat's files, checks change against limits and, when it
// fits, writes it. refused is the bound (or tree) error that stopped it
// before anything was written; err a database failure.
func applyFilesTx(ctx context.Context, tx pgx.Tx, chat string, change memory.WorkspaceChange, limits memory.WorkspaceLimits, now time.Time) (refused, err error) {
	if _, err := tx.Exec(ctx, lockWorkspaceSQL, chat); err != nil {
		return nil, fmt.Errorf("lock workspace: %w", err)
	}
	current, err := listFiles(ctx, tx, chat)
	if err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	if err := memory.CheckWorkspace(memory.ResultingSizes(current, change), change.Writes, limits); err != nil {
		return err, nil
	}
	if len(change.Deletes) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM workspace_files WHERE chat = $1 AND path = ANY($2)`, chat, change.Deletes); err != nil {
			return nil, fmt.Errorf("delete files: %w", err)
		}
	}
	if len(change.Writes) == 0 {
		return nil, nil
	}
	b := &pgx.Batch{}
	for _, w := range change.Writes {
		fi := memory.FileRecord(w.Path, w.Content, w.Mode, now)
		content := w.Content
		if content == nil {
			content = []byte{}
		}
		b.Queue(`INSERT INTO workspace_files (chat, path, size, sha256, modified, mode, content)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (chat, path) DO UPDATE SET size = EXCLUDED.size, sha256 = EXCLUDED.sha256,
				modified = EXCLUDED.modified, mode = EXCLUDED.mode, content = EXCLUDED.content`,
			chat, fi.Path, fi.Size, fi.SHA256, fi.Modified, int32(fi.Mode), content)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("write files: %w", err)
	}
	return nil, nil
}

// moveFilesTx moves from's files to to (MoveSession); it fails when both
// have files.
func moveFilesTx(ctx context.Context, tx pgx.Tx, from, to string) error {
	var fromFiles, toFiles bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workspace_files WHERE chat = $1),
			EXISTS (SELECT 1 FROM workspace_files WHERE chat = $2)`, from, to).Scan(&fromFiles, &toFiles)
	if err != nil || !fromFiles {
		return err
	}
	if toFiles {
		return fmt.Errorf("workspace %q already exists", to)
	}
	if _, err := tx.Exec(ctx, `UPDATE workspace_files SET chat = $2 WHERE chat = $1`, from, to); err != nil {
		return fmt.Errorf("move files: %w", err)
	}
	return nil
}

// ImportFile is one workspace file of an Import: its chat, record (Modified
// and Mode are kept) and content.
type ImportFile struct {
	Chat    string
	Info    memory.FileInfo
	Content []byte
}

func importFiles(ctx context.Context, tx pgx.Tx, d Import) error {
	var rows [][]any
	for _, f := range d.Files {
		fi := memory.FileRecord(f.Info.Path, f.Content, f.Info.Mode, f.Info.Modified)
		content := f.Content
		if content == nil {
			content = []byte{}
		}
		rows = append(rows, []any{f.Chat, fi.Path, fi.Size, fi.SHA256, fi.Modified, int32(fi.Mode), content})
	}
	return copyRows(ctx, tx, "workspace_files", []string{"chat", "path", "size", "sha256", "modified", "mode", "content"}, rows)
}
