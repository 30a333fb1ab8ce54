package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

func errEmptyKey(op string) error { return fmt.Errorf("memory: %s: empty session key", op) }

// AppendTurn commits a whole turn to the session key in one transaction and
// marks the inbox items in turn.Sources as answered with turn.ID and
// turn.Answer. The session is created on its first turn.
func (s *Store) AppendTurn(ctx context.Context, key string, turn memory.Turn) error {
	if key == "" {
		return errEmptyKey("append turn")
	}
	op := "append turn to " + key
	if len(turn.Messages) == 0 {
		return fmt.Errorf("memory: %s: turn has no messages", op)
	}
	msgs, err := json.Marshal(turn.Messages)
	if err != nil {
		return fmt.Errorf("memory: %s: encode messages: %w", op, err)
	}
	now := s.now()
	return s.tx(ctx, op, func(tx pgx.Tx) error { return appendTurnTx(ctx, tx, key, turn, msgs, now) })
}

// appendTurnTx writes turn (its messages already encoded) to session key and
// marks its Sources answered, inside tx (AppendTurn, CommitTurn). The session
// row is upserted first, which locks it for the rest of the transaction.
func appendTurnTx(ctx context.Context, tx pgx.Tx, key string, turn memory.Turn, msgs []byte, now time.Time) error {
	var lastUser time.Time
	for _, m := range turn.Messages {
		if m.Role != memory.RoleUser {
			continue
		}
		t := m.Time
		if t.IsZero() {
			t = now
		}
		if t.After(lastUser) {
			lastUser = t
		}
	}
	var sessionID int64
	err := tx.QueryRow(ctx, `INSERT INTO sessions AS s (key, created, updated, last_user_message, turns, messages,
			prompt_tokens, completion_tokens, total_tokens, last_turn_id)
		VALUES ($1, $2, $2, $3, 1, $4, $5, $6, $7, $8)
		ON CONFLICT (key) DO UPDATE SET
			updated = EXCLUDED.updated,
			last_user_message = GREATEST(s.last_user_message, EXCLUDED.last_user_message),
			turns = s.turns + 1,
			messages = s.messages + EXCLUDED.messages,
			prompt_tokens = s.prompt_tokens + EXCLUDED.prompt_tokens,
			completion_tokens = s.completion_tokens + EXCLUDED.completion_tokens,
			total_tokens = s.total_tokens + EXCLUDED.total_tokens,
			last_turn_id = CASE WHEN EXCLUDED.last_turn_id <> '' THEN EXCLUDED.last_turn_id ELSE s.last_turn_id END
		RETURNING id`,
		key, now, nullTime(lastUser), len(turn.Messages), turn.Usage.PromptTokens, turn.Usage.CompletionTokens,
		turn.Usage.TotalTokens, turn.ID).Scan(&sessionID)
	if err != nil {
		return fmt.Errorf("write session: %w", err)
	}
	var sources []int64
	if len(turn.Sources) > 0 {
		sources = ids(turn.Sources)
	}
	models, err := encodeModels(turn.Models)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO turns (session_id, turn_id, started, ended, finish_reason,
			prompt_tokens, completion_tokens, total_tokens, sources, answer, n_messages, messages, persona, job, models)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		sessionID, turn.ID, nullTime(turn.Started), nullTime(turn.Ended), turn.FinishReason,
		turn.Usage.PromptTokens, turn.Usage.CompletionTokens, turn.Usage.TotalTokens,
		sources, clean(turn.Answer), len(turn.Messages), string(msgs), clean(turn.Persona), clean(turn.Job), models)
	if err != nil {
		return fmt.Errorf("write turn: %w", err)
	}
	if err := addUsageTx(ctx, tx, memory.UsageRowsOf(key, turn, now)); err != nil {
		return err
	}
	if err := applyTurnFiles(ctx, tx, key, turn, now); err != nil {
		return err
	}
	if len(turn.Sources) > 0 {
		// Items already removed with InboxDone are simply not there.
		_, err = tx.Exec(ctx, `UPDATE inbox SET state = 'answered', turn_id = $2, answer = $3 WHERE id = ANY($1)`,
			sources, turn.ID, clean(turn.Answer))
		if err != nil {
			return fmt.Errorf("mark inbox answered: %w", err)
		}
	}
	return nil
}

// LoadHistory returns the last limit messages of the session (limit <= 0:
// all), oldest first, cut at a turn boundary: whole turns, newest first,
// while they fit. When not even the newest turn fits, that turn is condensed
// to its user messages and plain assistant answers (the last limit of them).
// The result is sanitized (see memory.SanitizeHistory). An unknown session
// has no history.
func (s *Store) LoadHistory(ctx context.Context, key string, limit int) ([]memory.Message, error) {
	op := "load history of " + key
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, historySQL, key, limit)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := collectHistory(rows, limit)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// historySQL selects the turns of LoadHistory's window ($1 key, $2 limit).
// upto is the number of messages from the newest turn back to this one
// (inclusive); the newest turn is always returned so that it can be condensed
// when it alone is over the limit.
const historySQL = `SELECT messages, upto FROM (
		SELECT t.id, t.messages, sum(t.n_messages) OVER (ORDER BY t.id DESC) AS upto,
			row_number() OVER (ORDER BY t.id DESC) AS rn
		FROM turns t JOIN sessions s ON s.id = t.session_id
		WHERE s.key = $1 AND t.archive_id IS NULL) w
	WHERE $2::bigint <= 0 OR upto <= $2::bigint OR rn = 1
	ORDER BY id`

// collectHistory reads historySQL's rows into the sanitized history.
func collectHistory(rows pgx.Rows, limit int) ([]memory.Message, error) {
	type window struct {
		msgs []memory.Message
		upto int64
	}
	turns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (window, error) {
		var raw []byte
		var w window
		if err := r.Scan(&raw, &w.upto); err != nil {
			return w, err
		}
		if err := json.Unmarshal(raw, &w.msgs); err != nil {
			return w, fmt.Errorf("decode messages: %w", err)
		}
		return w, nil
	})
	if err != nil {
		return nil, err
	}
	if len(turns) == 0 {
		return []memory.Message{}, nil
	}
	if limit > 0 && len(turns) == 1 && turns[0].upto > int64(limit) {
		return condensed(turns[0].msgs, limit), nil
	}
	var out []memory.Message
	for _, w := range turns {
		out = append(out, w.msgs...)
	}
	return memory.SanitizeHistory(out), nil
}

// ReadTurn reads a turn's history, session metadata and notes in one round
// trip (a pipelined batch; memory.TurnReader).
func (s *Store) ReadTurn(ctx context.Context, key string, limit int) (memory.TurnView, error) {
	op := "read turn context of " + key
	if err := s.begin(ctx, op); err != nil {
		return memory.TurnView{}, err
	}
	b := &pgx.Batch{}
	b.Queue(historySQL, key, limit)
	b.Queue(`SELECT `+metaColumns+` FROM sessions s WHERE s.key = $1`, key)
	b.Queue(notesSQL, key)
	br := s.pool.SendBatch(ctx, b)
	v, err := readTurnBatch(br, limit)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return memory.TurnView{}, s.wrap(op, err)
	}
	return v, nil
}

func readTurnBatch(br pgx.BatchResults, limit int) (memory.TurnView, error) {
	var v memory.TurnView
	rows, err := br.Query()
	if err != nil {
		return v, err
	}
	if v.History, err = collectHistory(rows, limit); err != nil {
		return v, err
	}
	v.Meta, err = scanMeta(br.QueryRow())
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		v.Meta = memory.SessionMeta{}
	case err != nil:
		return v, err
	default:
		v.Found = true
	}
	if rows, err = br.Query(); err != nil {
		return v, err
	}
	v.Notes, err = collectNotes(rows, func(memory.Note) bool { return true })
	return v, err
}

// condensed is a turn too long for the limit cut to its user messages and
// plain assistant answers, the last limit of them.
func condensed(msgs []memory.Message, limit int) []memory.Message {
	out := []memory.Message{}
	for _, m := range msgs {
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
	return memory.SanitizeHistory(out)
}

// metaColumns select a SessionMeta from sessions s (archive names included).
const metaColumns = `s.key, s.created, s.updated, s.last_user_message, s.turns, s.messages,
	s.prompt_tokens, s.completion_tokens, s.total_tokens, s.persona, s.last_turn_id,
	ARRAY(SELECT a.name FROM archives a WHERE a.session_id = s.id ORDER BY a.id)`

func scanMeta(row pgx.Row) (memory.SessionMeta, error) {
	var m memory.SessionMeta
	var lastUser *time.Time
	var archived []string
	err := row.Scan(&m.Key, &m.Created, &m.Updated, &lastUser, &m.Turns, &m.Messages,
		&m.Usage.PromptTokens, &m.Usage.CompletionTokens, &m.Usage.TotalTokens, &m.Persona, &m.LastTurnID, &archived)
	if err != nil {
		return memory.SessionMeta{}, err
	}
	m.Created, m.Updated, m.LastUserMessage = m.Created.UTC(), m.Updated.UTC(), fromNull(lastUser)
	if len(archived) > 0 {
		m.Archived = archived
	}
	return m, nil
}

// Session returns the metadata of a session; found is false if it does not
// exist.
func (s *Store) Session(ctx context.Context, key string) (memory.SessionMeta, bool, error) {
	op := "read session " + key
	if err := s.begin(ctx, op); err != nil {
		return memory.SessionMeta{}, false, err
	}
	m, err := scanMeta(s.pool.QueryRow(ctx, `SELECT `+metaColumns+` FROM sessions s WHERE s.key = $1`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.SessionMeta{}, false, nil
	}
	if err != nil {
		return memory.SessionMeta{}, false, s.wrap(op, err)
	}
	return m, true, nil
}

// ListSessions returns every session, most recently updated first.
func (s *Store) ListSessions(ctx context.Context) ([]memory.SessionMeta, error) {
	const op = "list sessions"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+metaColumns+` FROM sessions s ORDER BY s.updated DESC, s.key COLLATE "C"`)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.SessionMeta, error) { return scanMeta(r) })
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// SetSessionPersona binds persona to the session (creating it if needed);
// "" removes the binding.
func (s *Store) SetSessionPersona(ctx context.Context, key, persona string) error {
	if key == "" {
		return errEmptyKey("set persona")
	}
	now := s.now()
	return s.tx(ctx, "set persona of "+key, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO sessions AS s (key, created, updated, persona) VALUES ($1, $2, $2, $3)
			ON CONFLICT (key) DO UPDATE SET persona = EXCLUDED.persona, updated = EXCLUDED.updated`, key, now, persona)
		return err
	})
}

// turnColumns select a Turn from turns t.
const turnColumns = `t.turn_id, t.started, t.ended, t.finish_reason, t.prompt_tokens, t.completion_tokens,
	t.total_tokens, t.sources, t.answer, t.messages, t.persona, t.job, t.models`

func scanTurn(r pgx.CollectableRow) (memory.Turn, error) {
	var t memory.Turn
	var started, ended *time.Time
	var sources []int64
	var raw, models []byte
	err := r.Scan(&t.ID, &started, &ended, &t.FinishReason, &t.Usage.PromptTokens, &t.Usage.CompletionTokens,
		&t.Usage.TotalTokens, &sources, &t.Answer, &raw, &t.Persona, &t.Job, &models)
	if err != nil {
		return memory.Turn{}, err
	}
	if len(models) > 0 {
		if err := json.Unmarshal(models, &t.Models); err != nil {
			return memory.Turn{}, fmt.Errorf("decode models of turn %q: %w", t.ID, err)
		}
	}
	t.Started, t.Ended, t.Sources = fromNull(started), fromNull(ended), fromIDs(sources)
	if err := json.Unmarshal(raw, &t.Messages); err != nil {
		return memory.Turn{}, fmt.Errorf("decode messages of turn %q: %w", t.ID, err)
	}
	return t, nil
}

// queryTurns reads turns (with their messages), oldest first.
func queryTurns(ctx context.Context, q querier, where string, args ...any) ([]memory.Turn, error) {
	rows, err := q.Query(ctx, `SELECT `+turnColumns+` FROM turns t `+where+` ORDER BY t.id`, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scanTurn)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []memory.Turn{}
	}
	return out, nil
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SessionTurns returns the live turns of a session (each with its
// messages), oldest first. An unknown session has none.
func (s *Store) SessionTurns(ctx context.Context, key string) ([]memory.Turn, error) {
	op := "read turns of " + key
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	out, err := queryTurns(ctx, s.pool, `JOIN sessions s ON s.id = t.session_id WHERE s.key = $1 AND t.archive_id IS NULL`, key)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}
