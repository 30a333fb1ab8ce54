package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/postgres"
)

// readBolt reads a whole switchboard BoltDB file (memory/bolt's layout,
// schema 1, documented in its package doc) in one read-only transaction, so
// the copy is one consistent snapshot. The file first passes the integrity
// check `run` makes (bolt.ViewFile): a damaged one is a *bolt.CorruptError
// naming the damage and the fix, never a crash. A running daemon holds the
// file's lock: the read then fails after timeout with memory.ErrInUse.
func readBolt(path string, timeout time.Duration) (postgres.Import, error) {
	var d postgres.Import
	err := bolt.ViewFile(path, memory.Options{Timeout: timeout}, func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		if meta == nil || string(meta.Get([]byte("schema"))) != "1" {
			return fmt.Errorf("%w: no switchboard schema 1 marker", memory.ErrInvalidDatabase)
		}
		steps := []struct {
			name string
			fn   func(*bbolt.Tx, *postgres.Import) error
		}{
			{"sessions", readBoltSessions}, {"notes", readBoltNotes}, {"dedup", readBoltDedup},
			{"inbox and outbox", readBoltQueues}, {"jobs and runs", readBoltJobs}, {"audit and kv", readBoltAuditKV},
			{"usage", readBoltUsage}, {"workspace", readBoltFiles},
		}
		for _, st := range steps {
			if err := st.fn(tx, &d); err != nil {
				return fmt.Errorf("read %s: %w", st.name, err)
			}
		}
		return nil
	})
	var corrupt *bolt.CorruptError
	var pathErr *fs.PathError
	switch {
	case err == nil:
		return d, nil
	case errors.As(err, &corrupt):
		return postgres.Import{}, err // names the file, the damage and the fix
	case errors.Is(err, memory.ErrInUse):
		return postgres.Import{}, fmt.Errorf("bolt file %s: %w (stop the daemon first)", path, memory.ErrInUse)
	case errors.As(err, &pathErr): // no such file, permission denied
		return postgres.Import{}, fmt.Errorf("bolt file %s: %w", path, pathErr.Err)
	default:
		return postgres.Import{}, fmt.Errorf("bolt file %s: %w", path, err)
	}
}

// boltTurn and boltMessage are memory/bolt's stored shapes (sessions.go).
type boltTurn struct {
	Seq          uint64              `json:"seq"`
	ID           string              `json:"id"`
	Usage        memory.Usage        `json:"usage"`
	Started      time.Time           `json:"started"`
	Ended        time.Time           `json:"ended"`
	FinishReason string              `json:"finish_reason"`
	Sources      []uint64            `json:"sources,omitempty"`
	Answer       string              `json:"answer,omitempty"`
	First        uint64              `json:"first"`
	Count        int                 `json:"count"`
	Persona      string              `json:"persona,omitempty"`
	Job          string              `json:"job,omitempty"`
	Models       []memory.ModelUsage `json:"models,omitempty"`
}

type boltMessage struct {
	Turn uint64         `json:"turn"`
	M    memory.Message `json:"m"`
}

func beU64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// forEachJSON decodes every plain value of b (nested buckets skipped).
func forEachJSON[T any](b *bbolt.Bucket, fn func(k []byte, v T)) error {
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, raw []byte) error {
		if raw == nil {
			return nil
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		fn(k, v)
		return nil
	})
}

// forEachBucket calls fn for every nested bucket of b.
func forEachBucket(b *bbolt.Bucket, fn func(name []byte, child *bbolt.Bucket) error) error {
	if b == nil {
		return nil
	}
	return b.ForEachBucket(func(k []byte) error { return fn(k, b.Bucket(k)) })
}

// readBoltTurns reads the turns (with their messages) of a session-shaped
// bucket, oldest first.
func readBoltTurns(b *bbolt.Bucket) ([]memory.Turn, error) {
	msgs := map[uint64][]memory.Message{}
	err := forEachJSON(b.Bucket([]byte("msgs")), func(_ []byte, m boltMessage) { msgs[m.Turn] = append(msgs[m.Turn], m.M) })
	if err != nil {
		return nil, err
	}
	out := []memory.Turn{}
	err = forEachJSON(b.Bucket([]byte("turns")), func(_ []byte, st boltTurn) {
		out = append(out, memory.Turn{ID: st.ID, Messages: msgs[st.Seq], Usage: st.Usage, Started: st.Started, Ended: st.Ended,
			FinishReason: st.FinishReason, Sources: st.Sources, Answer: st.Answer, Persona: st.Persona, Job: st.Job, Models: st.Models})
	})
	return out, err
}

// readBoltUsage reads the usage book's detail rows
// (day\x00chat\x00persona\x00job\x00model → prompt, completion as two
// big-endian uint64); the totals beside them are sums the import need not copy.
func readBoltUsage(tx *bbolt.Tx, d *postgres.Import) error {
	b := tx.Bucket([]byte("usage"))
	if b == nil {
		return nil // a file from before the usage book
	}
	return b.ForEach(func(k, v []byte) error {
		parts := bytes.Split(k, []byte{0})
		if len(parts) != 5 || len(v) != 16 {
			return nil
		}
		d.Usage = append(d.Usage, memory.UsageRow{Day: string(parts[0]), Chat: string(parts[1]), Persona: string(parts[2]),
			Job: string(parts[3]), Model: string(parts[4]),
			PromptTokens: int64(binary.BigEndian.Uint64(v[:8])), CompletionTokens: int64(binary.BigEndian.Uint64(v[8:]))})
		return nil
	})
}

func readBoltSessions(tx *bbolt.Tx, d *postgres.Import) error {
	archives := tx.Bucket([]byte("archives"))
	return forEachBucket(tx.Bucket([]byte("sessions")), func(key []byte, sb *bbolt.Bucket) error {
		var s postgres.ImportSession
		raw := sb.Get([]byte("meta"))
		if raw == nil {
			return nil
		}
		if err := json.Unmarshal(raw, &s.Meta); err != nil {
			return fmt.Errorf("session %s: decode meta: %w", key, err)
		}
		var err error
		if s.Turns, err = readBoltTurns(sb); err != nil {
			return fmt.Errorf("session %s: %w", key, err)
		}
		ab := archives.Bucket(key)
		if ab != nil {
			s.ArchiveSeq = int(ab.Sequence())
		}
		err = forEachBucket(ab, func(id []byte, b *bbolt.Bucket) error {
			a := memory.Archive{ArchiveInfo: memory.ArchiveInfo{ID: string(id)}}
			if raw := b.Get([]byte("meta")); raw != nil {
				if err := json.Unmarshal(raw, &a.Meta); err != nil {
					return fmt.Errorf("archive %s: decode meta: %w", id, err)
				}
			}
			if v := b.Get([]byte("archived")); v != nil {
				t, err := time.Parse(time.RFC3339Nano, string(v))
				if err != nil {
					return fmt.Errorf("archive %s: time: %w", id, err)
				}
				a.Archived = t
			}
			var err error
			if a.Turns, err = readBoltTurns(b); err != nil {
				return fmt.Errorf("archive %s: %w", id, err)
			}
			s.Archives = append(s.Archives, a)
			return nil
		})
		if err != nil {
			return fmt.Errorf("session %s: %w", key, err)
		}
		d.Sessions = append(d.Sessions, s)
		return nil
	})
}

func readBoltNotes(tx *bbolt.Tx, d *postgres.Import) error {
	return forEachBucket(tx.Bucket([]byte("notes")), func(_ []byte, b *bbolt.Bucket) error {
		return forEachJSON(b, func(_ []byte, n memory.Note) { d.Notes = append(d.Notes, n) })
	})
}

func readBoltDedup(tx *bbolt.Tx, d *postgres.Import) error {
	b := tx.Bucket([]byte("dedup"))
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		for i, c := range k {
			if c == 0 {
				d.Dedup = append(d.Dedup, postgres.DedupRecord{Channel: string(k[:i]), MessageID: string(k[i+1:]),
					Expires: time.Unix(0, int64(beU64(v))).UTC()})
				return nil
			}
		}
		return fmt.Errorf("dedup key %q has no channel separator", k)
	})
}

func readBoltQueues(tx *bbolt.Tx, d *postgres.Import) error {
	err := forEachJSON(tx.Bucket([]byte("inbox")), func(_ []byte, it memory.InboxItem) { d.Inbox = append(d.Inbox, it) })
	if err != nil {
		return err
	}
	return forEachJSON(tx.Bucket([]byte("outbox")), func(_ []byte, r memory.OutboxRecord) { d.Outbox = append(d.Outbox, r) })
}

func readBoltJobs(tx *bbolt.Tx, d *postgres.Import) error {
	err := forEachJSON(tx.Bucket([]byte("jobs")), func(_ []byte, j memory.JobRecord) { d.Jobs = append(d.Jobs, j) })
	if err != nil {
		return err
	}
	return forEachBucket(tx.Bucket([]byte("runs")), func(_ []byte, b *bbolt.Bucket) error {
		return forEachJSON(b, func(_ []byte, r memory.JobRun) { d.Runs = append(d.Runs, r) })
	})
}

func readBoltAuditKV(tx *bbolt.Tx, d *postgres.Import) error {
	err := forEachJSON(tx.Bucket([]byte("audit")), func(_ []byte, r memory.AuditRecord) { d.Audit = append(d.Audit, r) })
	if err != nil {
		return err
	}
	d.KV = map[string][]byte{}
	b := tx.Bucket([]byte("kv"))
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		if v != nil {
			d.KV[string(k)] = append([]byte{}, v...)
		}
		return nil
	})
}
