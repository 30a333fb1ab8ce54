package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

var (
	kSessMeta = []byte("meta")
	kArchived = []byte("archived")
	bMsgs     = []byte("msgs")
	bTurns    = []byte("turns")
)

// storedMessage is a message with the sequence number of its turn.
type storedMessage struct {
	Turn uint64         `json:"turn"`
	M    memory.Message `json:"m"`
}

// storedTurn is a turn header; its messages are msgs[First : First+Count].
type storedTurn struct {
	Seq          uint64       `json:"seq"`
	ID           string       `json:"id"`
	Usage        memory.Usage `json:"usage"`
	Started      time.Time    `json:"started"`
	Ended        time.Time    `json:"ended"`
	FinishReason string       `json:"finish_reason"`
	Sources      []uint64     `json:"sources,omitempty"`
	Answer       string       `json:"answer,omitempty"`
	First        uint64       `json:"first"`
	Count        int          `json:"count"`
	// Added with the usage book (issue 30); older records have none.
	Persona string              `json:"persona,omitempty"`
	Job     string              `json:"job,omitempty"`
	Models  []memory.ModelUsage `json:"models,omitempty"`
}

func errEmptyKey(op string) error { return fmt.Errorf("memory: %s: empty session key", op) }

// AppendTurn commits a whole turn to the session key in one transaction
// (through DB.Batch, so concurrent sessions share a commit) and marks the inbox
// items in turn.Sources as answered with turn.ID and turn.Answer. The session
// is created on its first turn.
func (s *Store) AppendTurn(ctx context.Context, key string, turn memory.Turn) error {
	op := "append turn to " + key
	if key == "" {
		return errEmptyKey("append turn")
	}
	if len(turn.Messages) == 0 {
		return fmt.Errorf("memory: %s: turn has no messages", op)
	}
	now := s.now()
	return s.batch(ctx, op, func(tx *bbolt.Tx) error {
		a := newArena(turnArenaSize(turn))
		return appendTurnTx(tx, &a, key, turn, now)
	})
}

// appendTurnTx writes turn to session key and marks its Sources answered,
// inside tx (AppendTurn, CommitTurn).
func appendTurnTx(tx *bbolt.Tx, a *txArena, key string, turn memory.Turn, now time.Time) error {
	sb, meta, err := openSession(tx, key, now)
	if err != nil {
		return err
	}
	msgs, err := sb.CreateBucketIfNotExists(bMsgs)
	if err != nil {
		return fmt.Errorf("messages bucket: %w", err)
	}
	turns, err := sb.CreateBucketIfNotExists(bTurns)
	if err != nil {
		return fmt.Errorf("turns bucket: %w", err)
	}
	tseq, err := turns.NextSequence()
	if err != nil {
		return fmt.Errorf("turn sequence: %w", err)
	}
	st := storedTurn{Seq: tseq, ID: turn.ID, Usage: turn.Usage, Started: turn.Started, Ended: turn.Ended,
		FinishReason: turn.FinishReason, Sources: turn.Sources, Answer: turn.Answer, Count: len(turn.Messages),
		Persona: turn.Persona, Job: turn.Job, Models: turn.Models}
	for i, m := range turn.Messages {
		seq, err := msgs.NextSequence()
		if err != nil {
			return fmt.Errorf("message sequence: %w", err)
		}
		if i == 0 {
			st.First = seq
		}
		sm := storedMessage{Turn: tseq, M: m}
		if err := a.put(msgs, seq, func(b []byte) ([]byte, error) { return appendStoredMessage(b, &sm) }); err != nil {
			return err
		}
		if m.Role == memory.RoleUser {
			t := m.Time
			if t.IsZero() {
				t = now
			}
			if t.After(meta.LastUserMessage) {
				meta.LastUserMessage = t
			}
		}
	}
	if err := a.put(turns, tseq, func(b []byte) ([]byte, error) { return appendStoredTurn(b, &st) }); err != nil {
		return err
	}
	meta.Updated = now
	meta.Turns++
	meta.Messages += len(turn.Messages)
	meta.Usage = meta.Usage.Add(turn.Usage)
	if turn.ID != "" {
		meta.LastTurnID = turn.ID
	}
	m := a.mark()
	var err2 error
	if a.b, err2 = appendSessionMeta(a.b, &meta); err2 != nil {
		return fmt.Errorf("encode %s: %w", kSessMeta, err2)
	}
	if err := sb.Put(kSessMeta, a.since(m)); err != nil {
		return err
	}
	if err := addUsageTx(tx, memory.UsageRowsOf(key, turn, now)); err != nil {
		return err
	}
	if err := applyTurnFiles(tx, key, turn, now); err != nil {
		return err
	}
	return markAnswered(tx, a, turn)
}

// markAnswered sets the inbox items of turn.Sources to answered. Items already
// removed with InboxDone are skipped.
func markAnswered(tx *bbolt.Tx, a *txArena, turn memory.Turn) error {
	inbox := tx.Bucket(bInbox)
	for _, id := range turn.Sources {
		k := a.key(id)
		if rec := inbox.Get(k); rec != nil {
			m := a.mark()
			var ok bool
			if a.b, ok = appendAnsweredItem(a.b, rec, turn.ID, turn.Answer); ok {
				if err := inbox.Put(k, a.since(m)); err != nil {
					return err
				}
				continue
			}
		}
		var it memory.InboxItem
		found, err := getJSON(inbox, u64(id), &it)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		it.State = memory.InboxAnswered
		it.TurnID = turn.ID
		it.Answer = turn.Answer
		if err := putJSON(inbox, u64(id), it); err != nil {
			return err
		}
	}
	return nil
}

// LoadHistory returns the last limit messages of the session (limit <= 0: all),
// oldest first, for the model's context. The window is cut at a turn boundary:
// it never starts in the middle of a turn. When not even the newest turn fits,
// that turn is condensed to its user messages and its plain assistant answers
// (tool calls and results dropped) and the last limit of those are returned.
// The result is sanitized (see SanitizeHistory). An unknown session has no history.
func (s *Store) LoadHistory(ctx context.Context, key string, limit int) ([]memory.Message, error) {
	var out []memory.Message
	err := s.viewOp(ctx, func() string { return "load history of " + key }, func(tx *bbolt.Tx) error {
		var err error
		out, err = loadHistoryTx(tx, key, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return memory.SanitizeHistory(out), nil
}

// condensedLastTurn returns the user messages and plain assistant answers of
// the newest turn, at most limit of them (the newest).
func condensedLastTurn(sb *bbolt.Bucket, limit int) ([]memory.Message, error) {
	turns, msgs := sb.Bucket(bTurns), sb.Bucket(bMsgs)
	if turns == nil {
		return nil, nil
	}
	_, v := turns.Cursor().Last()
	if v == nil {
		return nil, nil
	}
	var st storedTurn
	if err := json.Unmarshal(v, &st); err != nil {
		return nil, fmt.Errorf("decode turn: %w", err)
	}
	ms, err := turnMessages(msgs, st)
	if err != nil {
		return nil, err
	}
	var out []memory.Message
	for _, m := range ms {
		switch {
		case m.Role == memory.RoleUser:
			out = append(out, m)
		case m.Role == memory.RoleAssistant && len(m.ToolCalls) == 0 && m.Content != "":
			out = append(out, m)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// turnMessages reads the messages of one stored turn.
func turnMessages(msgs *bbolt.Bucket, st storedTurn) ([]memory.Message, error) {
	out := make([]memory.Message, 0, st.Count)
	if msgs == nil || st.Count == 0 {
		return out, nil
	}
	c := msgs.Cursor()
	for k, v := c.Seek(u64(st.First)); k != nil && len(out) < st.Count; k, v = c.Next() {
		var sm storedMessage
		if err := decodeRecord(v, &sm); err != nil {
			return nil, fmt.Errorf("decode message %d: %w", fromU64(k), err)
		}
		if sm.Turn != st.Seq {
			break
		}
		out = append(out, sm.M)
	}
	return out, nil
}

// Session returns the metadata of a session; found is false if it does not exist.
func (s *Store) Session(ctx context.Context, key string) (memory.SessionMeta, bool, error) {
	var meta memory.SessionMeta
	var found bool
	err := s.viewOp(ctx, func() string { return "read session " + key }, func(tx *bbolt.Tx) error {
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		if sb == nil {
			return nil
		}
		var err error
		found, err = getJSON(sb, kSessMeta, &meta)
		return err
	})
	if err != nil {
		return memory.SessionMeta{}, false, err
	}
	return meta, found, nil
}

// ListSessions returns every session, most recently updated first.
func (s *Store) ListSessions(ctx context.Context) ([]memory.SessionMeta, error) {
	var out []memory.SessionMeta
	err := s.view(ctx, "list sessions", func(tx *bbolt.Tx) error {
		root := tx.Bucket(bSessions)
		return root.ForEachBucket(func(k []byte) error {
			var meta memory.SessionMeta
			found, err := getJSON(root.Bucket(k), kSessMeta, &meta)
			if err != nil {
				return err
			}
			if found {
				out = append(out, meta)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Updated.Equal(out[j].Updated) {
			return out[i].Updated.After(out[j].Updated)
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

// SetSessionPersona binds persona to the session (creating its metadata if
// needed); "" removes the binding.
func (s *Store) SetSessionPersona(ctx context.Context, key, persona string) error {
	if key == "" {
		return errEmptyKey("set persona")
	}
	now := s.now()
	return s.update(ctx, "set persona of "+key, func(tx *bbolt.Tx) error {
		sb, meta, err := openSession(tx, key, now)
		if err != nil {
			return err
		}
		meta.Persona = persona
		meta.Updated = now
		return putJSON(sb, kSessMeta, meta)
	})
}

// ResetSession moves the session's conversation into a new archive (readable
// with ArchivedSessions / LoadArchive) and leaves a fresh, empty session that
// keeps the persona binding and the list of archives. Resetting a session
// without messages, or one that does not exist, does nothing.
func (s *Store) ResetSession(ctx context.Context, key string) error {
	if key == "" {
		return errEmptyKey("reset session")
	}
	now := s.now()
	return s.update(ctx, "reset session "+key, func(tx *bbolt.Tx) error {
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		if sb == nil {
			return nil
		}
		var meta memory.SessionMeta
		if _, err := getJSON(sb, kSessMeta, &meta); err != nil {
			return err
		}
		msgs := sb.Bucket(bMsgs)
		if msgs == nil || (meta.Messages == 0 && countKeys(msgs) == 0) {
			return nil
		}
		ab, err := tx.Bucket(bArchives).CreateBucketIfNotExists([]byte(key))
		if err != nil {
			return fmt.Errorf("archive bucket: %w", err)
		}
		n, err := ab.NextSequence()
		if err != nil {
			return fmt.Errorf("archive sequence: %w", err)
		}
		id := fmt.Sprintf("%04d-%s", n, now.UTC().Format("20060102T150405Z"))
		dst, err := ab.CreateBucket([]byte(id))
		if err != nil {
			return fmt.Errorf("archive %s: %w", id, err)
		}
		for _, name := range [][]byte{bMsgs, bTurns} {
			if sb.Bucket(name) == nil {
				continue
			}
			if err := sb.MoveBucket(name, dst); err != nil {
				return fmt.Errorf("move %s to archive: %w", name, err)
			}
		}
		if err := putJSON(dst, kSessMeta, meta); err != nil {
			return err
		}
		if err := dst.Put(kArchived, []byte(now.Format(time.RFC3339Nano))); err != nil {
			return fmt.Errorf("archive time: %w", err)
		}
		fresh := memory.SessionMeta{Key: key, Created: now, Updated: now, Persona: meta.Persona,
			Archived: append(append([]string(nil), meta.Archived...), id)}
		return putJSON(sb, kSessMeta, fresh)
	})
}

// ArchivedSessions lists the archives of a session, oldest first.
func (s *Store) ArchivedSessions(ctx context.Context, key string) ([]memory.ArchiveInfo, error) {
	var out []memory.ArchiveInfo
	err := s.view(ctx, "list archives of "+key, func(tx *bbolt.Tx) error {
		ab := tx.Bucket(bArchives).Bucket([]byte(key))
		if ab == nil {
			return nil
		}
		return ab.ForEachBucket(func(k []byte) error {
			info, err := archiveInfo(ab.Bucket(k), string(k))
			if err != nil {
				return err
			}
			out = append(out, info)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func archiveInfo(b *bbolt.Bucket, id string) (memory.ArchiveInfo, error) {
	info := memory.ArchiveInfo{ID: id}
	if _, err := getJSON(b, kSessMeta, &info.Meta); err != nil {
		return memory.ArchiveInfo{}, err
	}
	if v := b.Get(kArchived); v != nil {
		t, err := time.Parse(time.RFC3339Nano, string(v))
		if err != nil {
			return memory.ArchiveInfo{}, fmt.Errorf("decode archive time: %w", err)
		}
		info.Archived = t
	}
	return info, nil
}

// LoadArchive reads one archive of a session with all its turns and messages.
// An unknown id yields an error wrapping ErrNotFound.
func (s *Store) LoadArchive(ctx context.Context, key, id string) (memory.Archive, error) {
	var out memory.Archive
	err := s.view(ctx, "load archive "+id+" of "+key, func(tx *bbolt.Tx) error {
		ab := tx.Bucket(bArchives).Bucket([]byte(key))
		if ab == nil || ab.Bucket([]byte(id)) == nil {
			return memory.ErrNotFound
		}
		var err error
		out, err = readArchive(ab.Bucket([]byte(id)), id)
		return err
	})
	if err != nil {
		return memory.Archive{}, err
	}
	return out, nil
}

func readArchive(b *bbolt.Bucket, id string) (memory.Archive, error) {
	info, err := archiveInfo(b, id)
	if err != nil {
		return memory.Archive{}, err
	}
	turns, err := readTurns(b)
	if err != nil {
		return memory.Archive{}, err
	}
	return memory.Archive{ArchiveInfo: info, Turns: turns}, nil
}

// readTurns reads all turns (with messages) of a session-shaped bucket.
func readTurns(b *bbolt.Bucket) ([]memory.Turn, error) {
	out := []memory.Turn{}
	tb := b.Bucket(bTurns)
	if tb == nil {
		return out, nil
	}
	msgs := b.Bucket(bMsgs)
	err := tb.ForEach(func(k, v []byte) error {
		var st storedTurn
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("decode turn %d: %w", fromU64(k), err)
		}
		ms, err := turnMessages(msgs, st)
		if err != nil {
			return err
		}
		out = append(out, memory.Turn{ID: st.ID, Messages: ms, Usage: st.Usage, Started: st.Started, Ended: st.Ended,
			FinishReason: st.FinishReason, Sources: st.Sources, Answer: st.Answer,
			Models: st.Models, Persona: st.Persona, Job: st.Job})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SessionTurns returns the live turns of a session (each with its messages),
// oldest first. An unknown session has none.
func (s *Store) SessionTurns(ctx context.Context, key string) ([]memory.Turn, error) {
	out := []memory.Turn{}
	err := s.view(ctx, "read turns of "+key, func(tx *bbolt.Tx) error {
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		if sb == nil {
			return nil
		}
		var err error
		out, err = readTurns(sb)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExportSession writes the session (metadata, turns with their messages and
// every archive) as one indented JSON document (SessionExport). An unknown
// session yields an error wrapping ErrNotFound.
func (s *Store) ExportSession(ctx context.Context, key string, w io.Writer) error {
	op := "export session " + key
	doc := memory.SessionExport{Format: memory.ExportFormat, Exported: s.now()}
	err := s.view(ctx, op, func(tx *bbolt.Tx) error {
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		if sb == nil {
			return memory.ErrNotFound
		}
		if _, err := getJSON(sb, kSessMeta, &doc.Meta); err != nil {
			return err
		}
		var err error
		if doc.Turns, err = readTurns(sb); err != nil {
			return err
		}
		ab := tx.Bucket(bArchives).Bucket([]byte(key))
		if ab == nil {
			return nil
		}
		return ab.ForEachBucket(func(k []byte) error {
			a, err := readArchive(ab.Bucket(k), string(k))
			if err != nil {
				return err
			}
			doc.Archives = append(doc.Archives, a)
			return nil
		})
	})
	if err != nil {
		return err
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

// openSession returns the session's bucket (created if needed) and its
// metadata (fresh if the session is new).
func openSession(tx *bbolt.Tx, key string, now time.Time) (*bbolt.Bucket, memory.SessionMeta, error) {
	sb, err := tx.Bucket(bSessions).CreateBucketIfNotExists([]byte(key))
	if err != nil {
		return nil, memory.SessionMeta{}, fmt.Errorf("session bucket: %w", err)
	}
	var meta memory.SessionMeta
	found, err := getJSON(sb, kSessMeta, &meta)
	if err != nil {
		return nil, memory.SessionMeta{}, err
	}
	if !found {
		meta = memory.SessionMeta{Key: key, Created: now}
	}
	return sb, meta, nil
}
