package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SessionMeta describes one session (one chat / thread).
type SessionMeta struct {
	Key     string    `json:"key"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// LastUserMessage is the time of the newest user message (zero if none).
	LastUserMessage time.Time `json:"last_user_message"`
	Turns           int       `json:"turns"`
	Messages        int       `json:"messages"`
	Usage           Usage     `json:"usage"`
	// Persona is the persona chosen for this session with /persona ("" = resolved from config).
	Persona string `json:"persona,omitempty"`
	// Archived lists the archive ids of earlier resets, oldest first.
	Archived []string `json:"archived,omitempty"`
	// LastTurnID is the id of the newest committed turn.
	LastTurnID string `json:"last_turn_id,omitempty"`
}

// ArchiveInfo describes one archived (reset) conversation of a session.
type ArchiveInfo struct {
	ID       string      `json:"id"`
	Archived time.Time   `json:"archived"`
	Meta     SessionMeta `json:"meta"`
}

// Archive is an archived conversation with its turns (each with its messages).
type Archive struct {
	ArchiveInfo
	Turns []Turn `json:"turns"`
}

// SessionExport is the JSON document ExportSession writes.
type SessionExport struct {
	Format   string      `json:"format"` // "switchboard.session.v1"
	Exported time.Time   `json:"exported"`
	Meta     SessionMeta `json:"meta"`
	// Turns of the live conversation, oldest first, each with its messages.
	Turns []Turn `json:"turns"`
	// Archives are the conversations before each reset, oldest first.
	Archives []Archive `json:"archives,omitempty"`
}

// ExportFormat is SessionExport.Format.
const ExportFormat = "switchboard.session.v1"

var (
	kSessMeta = []byte("meta")
	kArchived = []byte("archived")
	bMsgs     = []byte("msgs")
	bTurns    = []byte("turns")
)

// storedMessage is a message with the sequence number of its turn.
type storedMessage struct {
	Turn uint64  `json:"turn"`
	M    Message `json:"m"`
}

// storedTurn is a turn header; its messages are msgs[First : First+Count].
type storedTurn struct {
	Seq          uint64    `json:"seq"`
	ID           string    `json:"id"`
	Usage        Usage     `json:"usage"`
	Started      time.Time `json:"started"`
	Ended        time.Time `json:"ended"`
	FinishReason string    `json:"finish_reason"`
	Sources      []uint64  `json:"sources,omitempty"`
	Answer       string    `json:"answer,omitempty"`
	First        uint64    `json:"first"`
	Count        int       `json:"count"`
}

func errEmptyKey(op string) error { return fmt.Errorf("memory: %s: empty session key", op) }

// AppendTurn commits a whole turn to the session key in one transaction
// (through DB.Batch, so concurrent sessions share a commit) and marks the inbox
// items in turn.Sources as answered with turn.ID and turn.Answer. The session
// is created on its first turn.
func (s *Store) AppendTurn(ctx context.Context, key string, turn Turn) error {
	op := "append turn to " + key
	if key == "" {
		return errEmptyKey("append turn")
	}
	if len(turn.Messages) == 0 {
		return fmt.Errorf("memory: %s: turn has no messages", op)
	}
	now := s.now()
	return s.batch(ctx, op, func(tx *bolt.Tx) error {
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
			FinishReason: turn.FinishReason, Sources: turn.Sources, Answer: turn.Answer, Count: len(turn.Messages)}
		for i, m := range turn.Messages {
			seq, err := msgs.NextSequence()
			if err != nil {
				return fmt.Errorf("message sequence: %w", err)
			}
			if i == 0 {
				st.First = seq
			}
			if err := putJSON(msgs, u64(seq), storedMessage{Turn: tseq, M: m}); err != nil {
				return err
			}
			if m.Role == RoleUser {
				t := m.Time
				if t.IsZero() {
					t = now
				}
				if t.After(meta.LastUserMessage) {
					meta.LastUserMessage = t
				}
			}
		}
		if err := putJSON(turns, u64(tseq), st); err != nil {
			return err
		}
		meta.Updated = now
		meta.Turns++
		meta.Messages += len(turn.Messages)
		meta.Usage = meta.Usage.Add(turn.Usage)
		if turn.ID != "" {
			meta.LastTurnID = turn.ID
		}
		if err := putJSON(sb, kSessMeta, meta); err != nil {
			return err
		}
		return markAnswered(tx, turn)
	})
}

// markAnswered sets the inbox items of turn.Sources to answered. Items already
// removed with InboxDone are skipped.
func markAnswered(tx *bolt.Tx, turn Turn) error {
	inbox := tx.Bucket(bInbox)
	for _, id := range turn.Sources {
		var it InboxItem
		found, err := getJSON(inbox, u64(id), &it)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		it.State = InboxAnswered
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
func (s *Store) LoadHistory(ctx context.Context, key string, limit int) ([]Message, error) {
	var out []Message
	err := s.view(ctx, "load history of "+key, func(tx *bolt.Tx) error {
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		if sb == nil || sb.Bucket(bMsgs) == nil {
			return nil
		}
		msgs := sb.Bucket(bMsgs)
		var rev []storedMessage // newest first
		c := msgs.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var sm storedMessage
			if err := json.Unmarshal(v, &sm); err != nil {
				return fmt.Errorf("decode message %d: %w", fromU64(k), err)
			}
			rev = append(rev, sm)
			if limit > 0 && len(rev) == limit+1 {
				break
			}
		}
		window := make([]storedMessage, 0, len(rev))
		for i := len(rev) - 1; i >= 0; i-- {
			window = append(window, rev[i])
		}
		if limit > 0 && len(window) == limit+1 {
			// window[0] is the message just before the window: drop messages
			// that belong to its turn.
			before := window[0].Turn
			window = window[1:]
			for len(window) > 0 && window[0].Turn == before {
				window = window[1:]
			}
			if len(window) == 0 {
				condensed, err := condensedLastTurn(sb, limit)
				if err != nil {
					return err
				}
				out = condensed
				return nil
			}
		}
		out = make([]Message, len(window))
		for i, sm := range window {
			out[i] = sm.M
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return SanitizeHistory(out), nil
}

// condensedLastTurn returns the user messages and plain assistant answers of
// the newest turn, at most limit of them (the newest).
func condensedLastTurn(sb *bolt.Bucket, limit int) ([]Message, error) {
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
	var out []Message
	for _, m := range ms {
		switch {
		case m.Role == RoleUser:
			out = append(out, m)
		case m.Role == RoleAssistant && len(m.ToolCalls) == 0 && m.Content != "":
			out = append(out, m)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// turnMessages reads the messages of one stored turn.
func turnMessages(msgs *bolt.Bucket, st storedTurn) ([]Message, error) {
	out := make([]Message, 0, st.Count)
	if msgs == nil || st.Count == 0 {
		return out, nil
	}
	c := msgs.Cursor()
	for k, v := c.Seek(u64(st.First)); k != nil && len(out) < st.Count; k, v = c.Next() {
		var sm storedMessage
		if err := json.Unmarshal(v, &sm); err != nil {
			return nil, fmt.Errorf("decode message %d: %w", fromU64(k), err)
		}
		if sm.Turn != st.Seq {
			break
		}
		out = append(out, sm.M)
	}
	return out, nil
}

// SanitizeHistory makes a message list valid for a chat model: an assistant
// tool call whose result does not follow it is removed (the assistant message
// too, if it has nothing else to say), and a tool result that does not answer
// a tool call of the assistant message right before it is removed. The input is
// not modified.
func SanitizeHistory(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for i := 0; i < len(msgs); {
		m := msgs[i]
		switch {
		case m.Role == RoleTool:
			i++ // orphan: not in the result group of an assistant tool call
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			j := i + 1
			first := map[string]int{}
			for ; j < len(msgs) && msgs[j].Role == RoleTool; j++ {
				if _, dup := first[msgs[j].ToolCallID]; !dup {
					first[msgs[j].ToolCallID] = j
				}
			}
			kept := make([]ToolCall, 0, len(m.ToolCalls))
			keep := map[string]bool{}
			for _, tc := range m.ToolCalls {
				if _, ok := first[tc.ID]; ok && !keep[tc.ID] {
					kept = append(kept, tc)
					keep[tc.ID] = true
				}
			}
			am := m
			am.ToolCalls = kept
			if len(kept) == 0 {
				am.ToolCalls = nil
			}
			if len(kept) > 0 || am.Content != "" {
				out = append(out, am)
			}
			for k := i + 1; k < j; k++ {
				id := msgs[k].ToolCallID
				if keep[id] && first[id] == k {
					out = append(out, msgs[k])
				}
			}
			i = j
		default:
			out = append(out, m)
			i++
		}
	}
	return out
}

// Session returns the metadata of a session; found is false if it does not exist.
func (s *Store) Session(ctx context.Context, key string) (SessionMeta, bool, error) {
	var meta SessionMeta
	var found bool
	err := s.view(ctx, "read session "+key, func(tx *bolt.Tx) error {
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		if sb == nil {
			return nil
		}
		var err error
		found, err = getJSON(sb, kSessMeta, &meta)
		return err
	})
	if err != nil {
		return SessionMeta{}, false, err
	}
	return meta, found, nil
}

// ListSessions returns every session, most recently updated first.
func (s *Store) ListSessions(ctx context.Context) ([]SessionMeta, error) {
	var out []SessionMeta
	err := s.view(ctx, "list sessions", func(tx *bolt.Tx) error {
		root := tx.Bucket(bSessions)
		return root.ForEachBucket(func(k []byte) error {
			var meta SessionMeta
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
	return s.update(ctx, "set persona of "+key, func(tx *bolt.Tx) error {
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
	return s.update(ctx, "reset session "+key, func(tx *bolt.Tx) error {
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		if sb == nil {
			return nil
		}
		var meta SessionMeta
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
		fresh := SessionMeta{Key: key, Created: now, Updated: now, Persona: meta.Persona,
			Archived: append(append([]string(nil), meta.Archived...), id)}
		return putJSON(sb, kSessMeta, fresh)
	})
}

// ArchivedSessions lists the archives of a session, oldest first.
func (s *Store) ArchivedSessions(ctx context.Context, key string) ([]ArchiveInfo, error) {
	var out []ArchiveInfo
	err := s.view(ctx, "list archives of "+key, func(tx *bolt.Tx) error {
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

func archiveInfo(b *bolt.Bucket, id string) (ArchiveInfo, error) {
	info := ArchiveInfo{ID: id}
	if _, err := getJSON(b, kSessMeta, &info.Meta); err != nil {
		return ArchiveInfo{}, err
	}
	if v := b.Get(kArchived); v != nil {
		t, err := time.Parse(time.RFC3339Nano, string(v))
		if err != nil {
			return ArchiveInfo{}, fmt.Errorf("decode archive time: %w", err)
		}
		info.Archived = t
	}
	return info, nil
}

// LoadArchive reads one archive of a session with all its turns and messages.
// An unknown id yields an error wrapping ErrNotFound.
func (s *Store) LoadArchive(ctx context.Context, key, id string) (Archive, error) {
	var out Archive
	err := s.view(ctx, "load archive "+id+" of "+key, func(tx *bolt.Tx) error {
		ab := tx.Bucket(bArchives).Bucket([]byte(key))
		if ab == nil || ab.Bucket([]byte(id)) == nil {
			return ErrNotFound
		}
		var err error
		out, err = readArchive(ab.Bucket([]byte(id)), id)
		return err
	})
	if err != nil {
		return Archive{}, err
	}
	return out, nil
}

func readArchive(b *bolt.Bucket, id string) (Archive, error) {
	info, err := archiveInfo(b, id)
	if err != nil {
		return Archive{}, err
	}
	turns, err := readTurns(b)
	if err != nil {
		return Archive{}, err
	}
	return Archive{ArchiveInfo: info, Turns: turns}, nil
}

// readTurns reads all turns (with messages) of a session-shaped bucket.
func readTurns(b *bolt.Bucket) ([]Turn, error) {
	out := []Turn{}
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
		out = append(out, Turn{ID: st.ID, Messages: ms, Usage: st.Usage, Started: st.Started, Ended: st.Ended,
			FinishReason: st.FinishReason, Sources: st.Sources, Answer: st.Answer})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SessionTurns returns the live turns of a session (each with its messages),
// oldest first. An unknown session has none.
func (s *Store) SessionTurns(ctx context.Context, key string) ([]Turn, error) {
	out := []Turn{}
	err := s.view(ctx, "read turns of "+key, func(tx *bolt.Tx) error {
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
	doc := SessionExport{Format: ExportFormat, Exported: s.now()}
	err := s.view(ctx, op, func(tx *bolt.Tx) error {
		sb := tx.Bucket(bSessions).Bucket([]byte(key))
		if sb == nil {
			return ErrNotFound
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
func openSession(tx *bolt.Tx, key string, now time.Time) (*bolt.Bucket, SessionMeta, error) {
	sb, err := tx.Bucket(bSessions).CreateBucketIfNotExists([]byte(key))
	if err != nil {
		return nil, SessionMeta{}, fmt.Errorf("session bucket: %w", err)
	}
	var meta SessionMeta
	found, err := getJSON(sb, kSessMeta, &meta)
	if err != nil {
		return nil, SessionMeta{}, err
	}
	if !found {
		meta = SessionMeta{Key: key, Created: now}
	}
	return sb, meta, nil
}
