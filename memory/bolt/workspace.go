package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// The workspace (memory.Workspace) lives in the bucket workspace, one nested
// bucket per chat that has files:
//
//	workspace/<chat>/files/<path>           FileInfo (JSON)
//	workspace/<chat>/data/<path>\x00<n>     the content's chunk n (4-byte
//	                                        big-endian), at most wsChunk bytes
//
// Content is chunked so that a 10 MiB file is not one 10 MiB value (bolt
// copies a value's overflow pages whole on every rewrite of its leaf, and a
// read would map one contiguous run); a path never holds NUL (CleanPath), so
// path\x00 is a prefix of exactly one file's chunks. A chat whose last file
// is deleted loses its bucket, so MoveSession can tell "has files" by the
// bucket alone.

var (
	bWorkspace = []byte("workspace")
	bWSFiles   = []byte("files")
	bWSData    = []byte("data")
)

// wsChunk is the size of one content chunk.
const wsChunk = 256 << 10

// ListFiles returns chat's file records ordered by path (memory.Workspace).
func (s *Store) ListFiles(ctx context.Context, chat string) ([]memory.FileInfo, error) {
	var out []memory.FileInfo
	err := s.viewOp(ctx, func() string { return "list files of " + chat }, func(tx *bbolt.Tx) error {
		var err error
		out, err = listFilesTx(tx, chat)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadFile returns one file's content and record (memory.Workspace).
func (s *Store) ReadFile(ctx context.Context, chat, path string) ([]byte, memory.FileInfo, error) {
	var data []byte
	var fi memory.FileInfo
	err := s.viewOp(ctx, func() string { return "read file " + path + " of " + chat }, func(tx *bbolt.Tx) error {
		cb := chatFiles(tx, chat)
		if cb == nil {
			return memory.NotFoundFile(path)
		}
		raw := cb.Bucket(bWSFiles).Get([]byte(path))
		if raw == nil {
			return memory.NotFoundFile(path)
		}
		if err := json.Unmarshal(raw, &fi); err != nil {
			return fmt.Errorf("decode file record %s: %w", path, err)
		}
		data = make([]byte, 0, fi.Size)
		prefix := chunkPrefix(path)
		c := cb.Bucket(bWSData).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			data = append(data, v...)
		}
		if int64(len(data)) != fi.Size {
			return fmt.Errorf("file %s: %w: %d bytes stored, record says %d", path, memory.ErrInvalidDatabase, len(data), fi.Size)
		}
		return nil
	})
	if err != nil {
		return nil, memory.FileInfo{}, err
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
	err = s.update(ctx, "apply files of "+chat, func(tx *bbolt.Tx) error {
		var err error
		refused, err = applyFilesTx(tx, chat, change, limits, now)
		if err == nil && refused != nil {
			err = refused
		}
		return err
	})
	if refused != nil {
		return refused // the bound's own text, without the store's wrapping
	}
	return err
}

// applyTurnFiles applies a turn's Files inside the turn's commit. A change
// that is invalid or no longer fits the bounds is dropped (the turn still
// commits: memory/workspace.go); only a storage failure is an error.
func applyTurnFiles(tx *bbolt.Tx, key string, turn memory.Turn, now time.Time) error {
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
	_, err = applyFilesTx(tx, chat, change, turn.FileLimits, now)
	return err
}

// applyFilesTx checks change against limits and the chat's files and, when
// it fits, writes it. refused is the bound (or tree) error that stopped it
// before anything was written; err a storage failure.
func applyFilesTx(tx *bbolt.Tx, chat string, change memory.WorkspaceChange, limits memory.WorkspaceLimits, now time.Time) (refused, err error) {
	current, err := listFilesTx(tx, chat)
	if err != nil {
		return nil, err
	}
	if err := memory.CheckWorkspace(memory.ResultingSizes(current, change), change.Writes, limits); err != nil {
		return err, nil
	}
	if change.Empty() {
		return nil, nil
	}
	top, err := tx.CreateBucketIfNotExists(bWorkspace)
	if err != nil {
		return nil, fmt.Errorf("workspace bucket: %w", err)
	}
	cb, err := top.CreateBucketIfNotExists([]byte(chat))
	if err != nil {
		return nil, fmt.Errorf("workspace of %s: %w", chat, err)
	}
	files, err := cb.CreateBucketIfNotExists(bWSFiles)
	if err != nil {
		return nil, err
	}
	data, err := cb.CreateBucketIfNotExists(bWSData)
	if err != nil {
		return nil, err
	}
	for _, p := range change.Deletes {
		if err := files.Delete([]byte(p)); err != nil {
			return nil, err
		}
		if err := deleteChunks(data, p); err != nil {
			return nil, err
		}
	}
	for _, w := range change.Writes {
		if err := deleteChunks(data, w.Path); err != nil {
			return nil, err
		}
		for i, off := 0, 0; off < len(w.Content); i, off = i+1, off+wsChunk {
			end := min(off+wsChunk, len(w.Content))
			if err := data.Put(chunkKey(w.Path, i), w.Content[off:end]); err != nil {
				return nil, fmt.Errorf("write %s: %w", w.Path, err)
			}
		}
		rec, err := json.Marshal(memory.FileRecord(w.Path, w.Content, w.Mode, now))
		if err != nil {
			return nil, err
		}
		if err := files.Put([]byte(w.Path), rec); err != nil {
			return nil, fmt.Errorf("write %s: %w", w.Path, err)
		}
	}
	if k, _ := files.Cursor().First(); k == nil {
		if err := top.DeleteBucket([]byte(chat)); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// chatFiles is chat's workspace bucket, nil when it has no files.
func chatFiles(tx *bbolt.Tx, chat string) *bbolt.Bucket {
	top := tx.Bucket(bWorkspace)
	if top == nil {
		return nil
	}
	return top.Bucket([]byte(chat))
}

func listFilesTx(tx *bbolt.Tx, chat string) ([]memory.FileInfo, error) {
	cb := chatFiles(tx, chat)
	if cb == nil {
		return nil, nil
	}
	var out []memory.FileInfo
	err := cb.Bucket(bWSFiles).ForEach(func(k, v []byte) error {
		var fi memory.FileInfo
		if err := json.Unmarshal(v, &fi); err != nil {
			return fmt.Errorf("decode file record %s: %w", k, err)
		}
		out = append(out, fi)
		return nil
	})
	return out, err
}

func chunkPrefix(path string) []byte { return append([]byte(path), 0) }

func chunkKey(path string, i int) []byte {
	return binary.BigEndian.AppendUint32(chunkPrefix(path), uint32(i))
}

// deleteChunks removes every chunk of path.
func deleteChunks(data *bbolt.Bucket, path string) error {
	prefix := chunkPrefix(path)
	c := data.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// ForEachFileTx calls fn with every workspace file of every chat inside tx,
// chats and paths in order (`storage migrate` reads a bolt file with it).
func ForEachFileTx(tx *bbolt.Tx, fn func(chat string, fi memory.FileInfo, content []byte) error) error {
	top := tx.Bucket(bWorkspace)
	if top == nil {
		return nil
	}
	return top.ForEachBucket(func(chat []byte) error {
		cb := top.Bucket(chat)
		files, data := cb.Bucket(bWSFiles), cb.Bucket(bWSData)
		if files == nil || data == nil {
			return fmt.Errorf("workspace of %s: %w: missing buckets", chat, memory.ErrInvalidDatabase)
		}
		return files.ForEach(func(k, v []byte) error {
			var fi memory.FileInfo
			if err := json.Unmarshal(v, &fi); err != nil {
				return fmt.Errorf("decode file record %s: %w", k, err)
			}
			content := make([]byte, 0, fi.Size)
			prefix := chunkPrefix(fi.Path)
			c := data.Cursor()
			for ck, cv := c.Seek(prefix); ck != nil && bytes.HasPrefix(ck, prefix); ck, cv = c.Next() {
				content = append(content, cv...)
			}
			if int64(len(content)) != fi.Size {
				return fmt.Errorf("file %s of %s: %w: %d bytes stored, record says %d", fi.Path, chat, memory.ErrInvalidDatabase, len(content), fi.Size)
			}
			return fn(string(chat), fi, content)
		})
	})
}
