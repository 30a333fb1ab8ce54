package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// addUsageTx adds the turn's tokens to usage_daily inside tx (the turn's own
// transaction; migrations/0002_usage.up.sql).
func addUsageTx(ctx context.Context, tx pgx.Tx, rows []memory.UsageRow) error {
	for _, r := range rows {
		_, err := tx.Exec(ctx, `INSERT INTO usage_daily AS u (day, chat, persona, job, model, prompt_tokens, completion_tokens)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (day, chat, persona, job, model) DO UPDATE SET
				prompt_tokens = u.prompt_tokens + EXCLUDED.prompt_tokens,
				completion_tokens = u.completion_tokens + EXCLUDED.completion_tokens`,
			clean(r.Day), clean(r.Chat), clean(r.Persona), clean(r.Job), clean(r.Model), r.PromptTokens, r.CompletionTokens)
		if err != nil {
			return fmt.Errorf("write usage: %w", err)
		}
	}
	return nil
}

// encodeModels is the turns.models column of a turn (NULL when it has none).
func encodeModels(models []memory.ModelUsage) (any, error) {
	if len(models) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(models)
	if err != nil {
		return nil, fmt.Errorf("encode models: %w", err)
	}
	return string(b), nil
}

// UsageOn returns the tokens of day, of every chat or of one (memory.UsageBook).
func (s *Store) UsageOn(ctx context.Context, day, chat string) (memory.Usage, error) {
	op := "read usage of " + day
	if err := s.begin(ctx, op); err != nil {
		return memory.Usage{}, err
	}
	var p, c int64
	var err error
	if chat == "" {
		err = s.pool.QueryRow(ctx, `SELECT coalesce(sum(prompt_tokens), 0)::bigint, coalesce(sum(completion_tokens), 0)::bigint
			FROM usage_daily WHERE day = $1`, day).Scan(&p, &c)
	} else {
		err = s.pool.QueryRow(ctx, `SELECT coalesce(sum(prompt_tokens), 0)::bigint, coalesce(sum(completion_tokens), 0)::bigint
			FROM usage_daily WHERE day = $1 AND chat = $2`, day, chat).Scan(&p, &c)
	}
	if err != nil {
		return memory.Usage{}, s.wrap(op, err)
	}
	return memory.Usage{PromptTokens: int(p), CompletionTokens: int(c), TotalTokens: int(p + c)}, nil
}

// UsageRows returns the rows f selects (memory.UsageBook).
func (s *Store) UsageRows(ctx context.Context, f memory.UsageFilter) ([]memory.UsageRow, error) {
	const op = "read usage"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT day, chat, persona, job, model, prompt_tokens, completion_tokens
		FROM usage_daily
		WHERE ($1 = '' OR day >= $1) AND ($2 = '' OR day <= $2) AND ($3 = '' OR chat = $3)
		ORDER BY day, chat, persona, job, model`, f.From, f.To, f.Chat)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.UsageRow, error) {
		var u memory.UsageRow
		err := r.Scan(&u.Day, &u.Chat, &u.Persona, &u.Job, &u.Model, &u.PromptTokens, &u.CompletionTokens)
		return u, err
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}
