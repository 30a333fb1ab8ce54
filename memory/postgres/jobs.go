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

// jsonOrNull is raw JSON text as a parameter, or NULL when empty.
func jsonOrNull(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// PutJob creates or replaces a job. Created is kept from an existing record
// (or set now); Updated is set now. The spec is stored verbatim.
func (s *Store) PutJob(ctx context.Context, j memory.JobRecord) error {
	if j.Name == "" {
		return fmt.Errorf("memory: put job: empty name")
	}
	if len(j.Spec) > 0 && !json.Valid(j.Spec) {
		return fmt.Errorf("memory: put job %s: spec is not valid JSON", j.Name)
	}
	now := s.now()
	return s.tx(ctx, "put job "+j.Name, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO jobs (name, spec, created, updated) VALUES ($1, $2, $3, $3)
			ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, updated = EXCLUDED.updated`,
			j.Name, jsonOrNull(j.Spec), now)
		return err
	})
}

func scanJob(r pgx.CollectableRow) (memory.JobRecord, error) {
	var j memory.JobRecord
	var spec *string
	if err := r.Scan(&j.Name, &spec, &j.Created, &j.Updated); err != nil {
		return j, err
	}
	if spec != nil {
		j.Spec = json.RawMessage(*spec)
	}
	j.Created, j.Updated = j.Created.UTC(), j.Updated.UTC()
	return j, nil
}

// GetJob returns the job named name; found is false if there is none.
func (s *Store) GetJob(ctx context.Context, name string) (memory.JobRecord, bool, error) {
	op := "get job " + name
	if err := s.begin(ctx, op); err != nil {
		return memory.JobRecord{}, false, err
	}
	rows, err := s.pool.Query(ctx, `SELECT name, spec::text, created, updated FROM jobs WHERE name = $1`, name)
	if err != nil {
		return memory.JobRecord{}, false, s.wrap(op, err)
	}
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.JobRecord{}, false, nil
	}
	if err != nil {
		return memory.JobRecord{}, false, s.wrap(op, err)
	}
	return j, true, nil
}

// ListJobs returns every job ordered by name.
func (s *Store) ListJobs(ctx context.Context) ([]memory.JobRecord, error) {
	const op = "list jobs"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT name, spec::text, created, updated FROM jobs ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if out == nil {
		out = []memory.JobRecord{}
	}
	return out, nil
}

// DeleteJob removes a job and its run history; an unknown name yields an
// error wrapping ErrNotFound.
func (s *Store) DeleteJob(ctx context.Context, name string) error {
	return s.tx(ctx, "delete job "+name, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM jobs WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return memory.ErrNotFound
		}
		_, err = tx.Exec(ctx, `DELETE FROM runs WHERE job = $1`, name)
		return err
	})
}

func deliveriesJSON(d []memory.DeliveryStatus) (any, error) {
	if d == nil {
		return nil, nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode deliveries: %w", err)
	}
	return string(b), nil
}

// AddRun records a run of run.Job and returns its ID (unique across jobs).
// The job record itself need not exist (runs of config-defined jobs).
func (s *Store) AddRun(ctx context.Context, run memory.JobRun) (uint64, error) {
	if run.Job == "" {
		return 0, fmt.Errorf("memory: add run: empty job name")
	}
	op := "add run of " + run.Job
	deliveries, err := deliveriesJSON(run.Deliveries)
	if err != nil {
		return 0, fmt.Errorf("memory: %s: %w", op, err)
	}
	if err := s.begin(ctx, op); err != nil {
		return 0, err
	}
	var id int64
	err = s.pool.QueryRow(ctx, `INSERT INTO runs (job, scheduled, started, finished, status, error, deliveries)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		run.Job, nullTime(run.Scheduled), nullTime(run.Started), nullTime(run.Finished), run.Status, clean(run.Error), deliveries).Scan(&id)
	if err != nil {
		return 0, s.wrap(op, err)
	}
	return uint64(id), nil
}

// UpdateRun replaces the run (run.Job, run.ID); an unknown run yields an
// error wrapping ErrNotFound.
func (s *Store) UpdateRun(ctx context.Context, run memory.JobRun) error {
	op := fmt.Sprintf("update run %d of %s", run.ID, run.Job)
	deliveries, err := deliveriesJSON(run.Deliveries)
	if err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET scheduled = $3, started = $4, finished = $5, status = $6, error = $7, deliveries = $8
		WHERE id = $1 AND job = $2`, int64(run.ID), run.Job, nullTime(run.Scheduled), nullTime(run.Started), nullTime(run.Finished),
		run.Status, clean(run.Error), deliveries)
	if err != nil {
		return s.wrap(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("memory: %s: %w", op, memory.ErrNotFound)
	}
	return nil
}

// ListRuns returns the runs of job, newest first, at most limit (<= 0: all).
func (s *Store) ListRuns(ctx context.Context, job string, limit int) ([]memory.JobRun, error) {
	op := "list runs of " + job
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, job, scheduled, started, finished, status, error, deliveries::text
		FROM runs WHERE job = $1 ORDER BY id DESC LIMIT NULLIF($2::bigint, 0)`, job, max(limit, 0))
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.JobRun, error) {
		var run memory.JobRun
		var id int64
		var sched, started, finished *time.Time
		var deliveries *string
		if err := r.Scan(&id, &run.Job, &sched, &started, &finished, &run.Status, &run.Error, &deliveries); err != nil {
			return run, err
		}
		run.ID, run.Scheduled, run.Started, run.Finished = uint64(id), fromNull(sched), fromNull(started), fromNull(finished)
		if deliveries != nil {
			if err := json.Unmarshal([]byte(*deliveries), &run.Deliveries); err != nil {
				return run, fmt.Errorf("decode deliveries of run %d: %w", id, err)
			}
		}
		return run, nil
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if out == nil {
		out = []memory.JobRun{}
	}
	return out, nil
}
