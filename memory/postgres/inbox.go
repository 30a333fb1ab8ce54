package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/memory"
)

// Accept records (channel, message id) for dedup and appends the item to
// the inbox in one transaction. The dedup row is inserted, or renewed when
// the existing one has expired; when a live row exists nothing is written and
// duplicate is true. Two replicas accepting the same message concurrently
// serialize on the dedup primary key: one gets the row, the other sees a
// duplicate. An empty MessageID skips dedup.
func (s *Store) Accept(ctx context.Context, item memory.InboxItem) (id uint64, duplicate bool, err error) {
	if item.Channel == "" {
		return 0, false, fmt.Errorf("memory: accept: empty channel")
	}
	now := s.now()
	if item.Received.IsZero() {
		item.Received = now
	}
	expires := now.Add(s.opts.DedupTTL)
	op := fmt.Sprintf("accept %s message %q", item.Channel, item.MessageID)
	err = s.tx(ctx, op, func(tx pgx.Tx) error {
		id, duplicate = 0, false
		if item.MessageID != "" {
			var one int
			err := tx.QueryRow(ctx, `INSERT INTO dedup (channel, message_id, expires) VALUES ($1, $2, $3)
				ON CONFLICT (channel, message_id) DO UPDATE SET expires = EXCLUDED.expires WHERE dedup.expires <= $4
				RETURNING 1`, item.Channel, item.MessageID, expires, now).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				duplicate = true
				return nil
			}
			if err != nil {
				return fmt.Errorf("write dedup record: %w", err)
			}
		}
		var payload []byte
		if len(item.Payload) > 0 {
			payload = item.Payload
		}
		var newID int64
		err := tx.QueryRow(ctx, `INSERT INTO inbox (channel, message_id, session_key, payload, received, state)
			VALUES ($1, $2, $3, $4, $5, 'pending') RETURNING id`,
			item.Channel, item.MessageID, item.SessionKey, payload, item.Received.UTC()).Scan(&newID)
		if err != nil {
			return fmt.Errorf("write inbox item: %w", err)
		}
		id = uint64(newID)
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return id, duplicate, nil
}

// Seen reports whether (channel, messageID) has an unexpired dedup record.
func (s *Store) Seen(ctx context.Context, channel, messageID string) (bool, error) {
	if err := s.begin(ctx, "dedup lookup"); err != nil {
		return false, err
	}
	var seen bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM dedup WHERE channel = $1 AND message_id = $2 AND expires > $3)`,
		channel, messageID, s.now()).Scan(&seen)
	return seen, s.wrap("dedup lookup", err)
}

const inboxColumns = `id, channel, message_id, session_key, payload, received, state, turn_id, answer`

func scanInbox(rows pgx.CollectableRow) (memory.InboxItem, error) {
	var it memory.InboxItem
	var id int64
	err := rows.Scan(&id, &it.Channel, &it.MessageID, &it.SessionKey, &it.Payload, &it.Received, &it.State, &it.TurnID, &it.Answer)
	it.ID = uint64(id)
	it.Received = it.Received.UTC()
	return it, err
}

// InboxPending returns every inbox item not yet removed with InboxDone
// (pending and answered), ordered by ID.
func (s *Store) InboxPending(ctx context.Context) ([]memory.InboxItem, error) {
	const op = "list inbox"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+inboxColumns+` FROM inbox ORDER BY id`)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, scanInbox)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// InboxPendingSession returns the pending items of one session, oldest first
// (the hub's claims mode reads a claimed session's backlog with it).
func (s *Store) InboxPendingSession(ctx context.Context, session string) ([]memory.InboxItem, error) {
	const op = "list a session's inbox"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+inboxColumns+` FROM inbox WHERE session_key = $1 ORDER BY id`, session)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, scanInbox)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// InboxDone removes finished items. Unknown ids are ignored; the dedup
// records stay.
func (s *Store) InboxDone(ctx context.Context, done ...uint64) error {
	if len(done) == 0 {
		return nil
	}
	return s.tx(ctx, "inbox done", func(tx pgx.Tx) error { return inboxDoneTx(ctx, tx, done) })
}

func inboxDoneTx(ctx context.Context, tx pgx.Tx, done []uint64) error {
	if len(done) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM inbox WHERE id = ANY($1)`, ids(done)); err != nil {
		return fmt.Errorf("delete inbox items: %w", err)
	}
	return nil
}

func putIntentTx(ctx context.Context, tx pgx.Tx, r memory.OutboxRecord) (uint64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO outbox (target, turn_id, chunk, text, status, platform_id, error, created, updated)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		r.Target, r.TurnID, r.Chunk, clean(r.Text), r.Status, clean(r.PlatformID), clean(r.Error), r.Created, r.Updated).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("write outbox intent: %w", err)
	}
	return uint64(id), nil
}

// OutboxIntent records that chunk r.Chunk of turn r.TurnID is about to be
// sent to r.Target and returns its ID. Status defaults to pending; Created
// and Updated are set from the store clock.
func (s *Store) OutboxIntent(ctx context.Context, r memory.OutboxRecord) (uint64, error) {
	r, err := memory.PrepareIntent(r, s.now())
	if err != nil {
		return 0, err
	}
	var id uint64
	err = s.tx(ctx, "outbox intent for "+r.Target, func(tx pgx.Tx) error {
		var err error
		id, err = putIntentTx(ctx, tx, r)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// receiptTx completes outbox record r.ID; an unknown id is ErrNotFound.
func receiptTx(ctx context.Context, tx pgx.Tx, r memory.Receipt, now time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE outbox SET status = $2, platform_id = $3, error = $4, updated = $5 WHERE id = $1`,
		int64(r.ID), r.Status, clean(r.PlatformID), clean(r.Error), now)
	if err != nil {
		return fmt.Errorf("outbox record %d: %w", r.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("outbox record %d: %w", r.ID, memory.ErrNotFound)
	}
	return nil
}

// OutboxResult records the outcome of the send of outbox record id. An
// unknown id yields an error wrapping ErrNotFound.
func (s *Store) OutboxResult(ctx context.Context, id uint64, status, platformID, errText string) error {
	op := fmt.Sprintf("outbox result %d", id)
	if !memory.ValidOutboxStatus(status) {
		return fmt.Errorf("memory: %s: invalid status %q", op, status)
	}
	now := s.now()
	return s.tx(ctx, op, func(tx pgx.Tx) error {
		return receiptTx(ctx, tx, memory.Receipt{ID: id, Status: status, PlatformID: platformID, Error: errText}, now)
	})
}

const outboxColumns = `id, target, turn_id, chunk, text, status, platform_id, error, created, updated`

func scanOutbox(rows pgx.CollectableRow) (memory.OutboxRecord, error) {
	var r memory.OutboxRecord
	var id int64
	err := rows.Scan(&id, &r.Target, &r.TurnID, &r.Chunk, &r.Text, &r.Status, &r.PlatformID, &r.Error, &r.Created, &r.Updated)
	r.ID = uint64(id)
	r.Created, r.Updated = r.Created.UTC(), r.Updated.UTC()
	return r, err
}

func (s *Store) listOutbox(ctx context.Context, op, query string, args ...any) ([]memory.OutboxRecord, error) {
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, scanOutbox)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// OutboxForTurn returns the outbox records of a turn ordered by ID.
func (s *Store) OutboxForTurn(ctx context.Context, turnID string) ([]memory.OutboxRecord, error) {
	return s.listOutbox(ctx, "outbox of turn "+turnID,
		`SELECT `+outboxColumns+` FROM outbox WHERE turn_id = $1 ORDER BY id`, turnID)
}

// OutboxPending returns the records still in state pending (send intents
// without a receipt), ordered by ID: what a restart must reconcile.
func (s *Store) OutboxPending(ctx context.Context) ([]memory.OutboxRecord, error) {
	return s.listOutbox(ctx, "list pending outbox",
		`SELECT `+outboxColumns+` FROM outbox WHERE status = 'pending' ORDER BY id`)
}
