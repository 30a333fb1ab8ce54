package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// Import is a whole installation's data, as `switchboard storage migrate`
// reads it from another backend: every record with its own id and times,
// so turns keep pointing at their inbox items and outbox records at their
// turns.
type Import struct {
	Sessions []ImportSession
	Notes    []memory.Note
	Dedup    []DedupRecord
	Inbox    []memory.InboxItem
	Outbox   []memory.OutboxRecord
	Jobs     []memory.JobRecord
	Runs     []memory.JobRun
	Audit    []memory.AuditRecord
	KV       map[string][]byte
	// Usage is the usage book (memory.UsageBook rows).
	Usage []memory.UsageRow
	// Files are the chats' workspace files (memory.Workspace).
	Files []ImportFile
}

// ImportSession is one session: its metadata (Archived is derived from
// Archives), its live turns and its archives, oldest first.
type ImportSession struct {
	Meta     memory.SessionMeta
	Turns    []memory.Turn
	Archives []memory.Archive
	// ArchiveSeq is the number of the last archive ever made ("0003-…" = 3);
	// 0 means len(Archives).
	ArchiveSeq int
}

// DedupRecord is one (channel, message id) pair and when it stops blocking.
type DedupRecord struct {
	Channel, MessageID string
	Expires            time.Time
}

// tables lists every data table, for emptiness checks and --force.
var tables = []string{"sessions", "archives", "turns", "dedup", "inbox", "outbox", "notes", "jobs", "runs", "audit", "kv", "usage_daily", "workspace_files"}

// Empty reports whether the database holds no record at all.
func (s *Store) Empty(ctx context.Context) (bool, error) {
	const op = "check the database is empty"
	if err := s.begin(ctx, op); err != nil {
		return false, err
	}
	for _, t := range tables {
		var some bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t+`)`).Scan(&some); err != nil {
			return false, s.wrap(op, err)
		}
		if some {
			return false, nil
		}
	}
	return true, nil
}

// Import writes d in one transaction, keeping every id and time, and moves
// the id sequences past the imported ids. With replace, every table is
// emptied first (in the same transaction); without it, importing into a
// database that already holds records fails on the first clashing id.
func (s *Store) Import(ctx context.Context, d Import, replace bool) error {
	return s.tx(ctx, "import", func(tx pgx.Tx) error {
		if replace {
			if _, err := tx.Exec(ctx, `TRUNCATE sessions, archives, turns, dedup, inbox, outbox, notes, jobs, runs, audit, kv, usage_daily, workspace_files RESTART IDENTITY`); err != nil {
				return fmt.Errorf("empty the database: %w", err)
			}
		}
		steps := []struct {
			name string
			fn   func(context.Context, pgx.Tx, Import) error
		}{
			{"sessions", importSessions}, {"records", importRecords}, {"jobs", importJobs}, {"usage", importUsage},
			{"workspace", importFiles},
		}
		for _, st := range steps {
			if err := st.fn(ctx, tx, d); err != nil {
				return fmt.Errorf("import %s: %w", st.name, err)
			}
		}
		for _, t := range []string{"sessions", "archives", "turns", "inbox", "outbox", "notes", "runs", "audit"} {
			_, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'id'), coalesce((SELECT max(id) FROM `+t+`), 0) + 1, false)`)
			if err != nil {
				return fmt.Errorf("advance the %s id sequence: %w", t, err)
			}
		}
		return nil
	})
}

// copyRows bulk-loads rows into table with COPY.
func copyRows(ctx context.Context, tx pgx.Tx, table string, cols []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	return nil
}

func importSessions(ctx context.Context, tx pgx.Tx, d Import) error {
	var sessions, archives, turns [][]any
	var archiveID, turnID int64
	addTurns := func(sessionID int64, archive any, ts []memory.Turn) error {
		for _, t := range ts {
			if len(t.Messages) == 0 {
				continue // no backend writes one; nothing to keep
			}
			msgs, err := json.Marshal(t.Messages)
			if err != nil {
				return fmt.Errorf("encode turn %q: %w", t.ID, err)
			}
			var sources []int64
			if len(t.Sources) > 0 {
				sources = ids(t.Sources)
			}
			models, err := encodeModels(t.Models)
			if err != nil {
				return fmt.Errorf("turn %q: %w", t.ID, err)
			}
			turnID++
			turns = append(turns, []any{turnID, sessionID, archive, t.ID, nullTime(t.Started), nullTime(t.Ended), t.FinishReason,
				int64(t.Usage.PromptTokens), int64(t.Usage.CompletionTokens), int64(t.Usage.TotalTokens), sources, clean(t.Answer),
				int32(len(t.Messages)), string(msgs), clean(t.Persona), clean(t.Job), models})
		}
		return nil
	}
	for i, sess := range d.Sessions {
		m, sessionID := sess.Meta, int64(i+1)
		seq := sess.ArchiveSeq
		if seq < len(sess.Archives) {
			seq = len(sess.Archives)
		}
		sessions = append(sessions, []any{sessionID, m.Key, m.Created.UTC(), m.Updated.UTC(), nullTime(m.LastUserMessage),
			int32(m.Turns), int32(m.Messages), int64(m.Usage.PromptTokens), int64(m.Usage.CompletionTokens), int64(m.Usage.TotalTokens),
			m.Persona, m.LastTurnID, int32(seq)})
		for _, a := range sess.Archives {
			meta, err := json.Marshal(a.Meta)
			if err != nil {
				return fmt.Errorf("encode archive %s of %s: %w", a.ID, m.Key, err)
			}
			archiveID++
			archives = append(archives, []any{archiveID, sessionID, a.ID, a.Archived.UTC(), string(meta)})
			if err := addTurns(sessionID, archiveID, a.Turns); err != nil {
				return err
			}
		}
		if err := addTurns(sessionID, nil, sess.Turns); err != nil {
			return err
		}
	}
	if err := copyRows(ctx, tx, "sessions", []string{"id", "key", "created", "updated", "last_user_message", "turns", "messages",
		"prompt_tokens", "completion_tokens", "total_tokens", "persona", "last_turn_id", "archive_seq"}, sessions); err != nil {
		return err
	}
	if err := copyRows(ctx, tx, "archives", []string{"id", "session_id", "name", "archived", "meta"}, archives); err != nil {
		return err
	}
	return copyRows(ctx, tx, "turns", []string{"id", "session_id", "archive_id", "turn_id", "started", "ended", "finish_reason",
		"prompt_tokens", "completion_tokens", "total_tokens", "sources", "answer", "n_messages", "messages",
		"persona", "job", "models"}, turns)
}

func importRecords(ctx context.Context, tx pgx.Tx, d Import) error {
	var rows [][]any
	for _, r := range d.Dedup {
		rows = append(rows, []any{r.Channel, r.MessageID, r.Expires.UTC()})
	}
	if err := copyRows(ctx, tx, "dedup", []string{"channel", "message_id", "expires"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, it := range d.Inbox {
		var payload []byte
		if len(it.Payload) > 0 {
			payload = it.Payload
		}
		state := it.State
		if state != memory.InboxAnswered {
			state = memory.InboxPending
		}
		rows = append(rows, []any{int64(it.ID), it.Channel, it.MessageID, it.SessionKey, payload, it.Received.UTC(), state, it.TurnID, clean(it.Answer)})
	}
	if err := copyRows(ctx, tx, "inbox", []string{"id", "channel", "message_id", "session_key", "payload", "received", "state", "turn_id", "answer"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, r := range d.Outbox {
		rows = append(rows, []any{int64(r.ID), r.Target, r.TurnID, int32(r.Chunk), clean(r.Text), r.Status, clean(r.PlatformID), clean(r.Error), r.Created.UTC(), r.Updated.UTC()})
	}
	if err := copyRows(ctx, tx, "outbox", []string{"id", "target", "turn_id", "chunk", "text", "status", "platform_id", "error", "created", "updated"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, n := range d.Notes {
		rows = append(rows, []any{int64(n.ID), n.Scope, clean(n.Text), n.Created.UTC()})
	}
	if err := copyRows(ctx, tx, "notes", []string{"id", "scope", "text", "created"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, a := range d.Audit {
		rows = append(rows, []any{int64(a.ID), a.Time.UTC(), clean(a.Actor), clean(a.Action), a.Session, clean(a.Detail), clean(a.Error)})
	}
	if err := copyRows(ctx, tx, "audit", []string{"id", "time", "actor", "action", "session", "detail", "error"}, rows); err != nil {
		return err
	}
	rows = nil
	for k, v := range d.KV {
		if v == nil {
			v = []byte{}
		}
		rows = append(rows, []any{k, v})
	}
	return copyRows(ctx, tx, "kv", []string{"key", "value"}, rows)
}

func importJobs(ctx context.Context, tx pgx.Tx, d Import) error {
	var rows [][]any
	for _, j := range d.Jobs {
		rows = append(rows, []any{j.Name, jsonOrNull(j.Spec), j.Created.UTC(), j.Updated.UTC()})
	}
	if err := copyRows(ctx, tx, "jobs", []string{"name", "spec", "created", "updated"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, r := range d.Runs {
		deliveries, err := deliveriesJSON(r.Deliveries)
		if err != nil {
			return err
		}
		rows = append(rows, []any{int64(r.ID), r.Job, nullTime(r.Scheduled), nullTime(r.Started), nullTime(r.Finished), r.Status, clean(r.Error), deliveries})
	}
	return copyRows(ctx, tx, "runs", []string{"id", "job", "scheduled", "started", "finished", "status", "error", "deliveries"}, rows)
}

func importUsage(ctx context.Context, tx pgx.Tx, d Import) error {
	var rows [][]any
	for _, r := range d.Usage {
		rows = append(rows, []any{clean(r.Day), clean(r.Chat), clean(r.Persona), clean(r.Job), clean(r.Model), r.PromptTokens, r.CompletionTokens})
	}
	return copyRows(ctx, tx, "usage_daily", []string{"day", "chat", "persona", "job", "model", "prompt_tokens", "completion_tokens"}, rows)
}
