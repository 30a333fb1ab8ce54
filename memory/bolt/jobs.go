package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// PutJob creates or replaces a job. Created is kept from an existing record
// (or set now); Updated is set now.
func (s *Store) PutJob(ctx context.Context, j memory.JobRecord) error {
	if j.Name == "" {
		return fmt.Errorf("memory: put job: empty name")
	}
	if len(j.Spec) > 0 && !json.Valid(j.Spec) {
		return fmt.Errorf("memory: put job %s: spec is not valid JSON", j.Name)
	}
	now := s.now()
	return s.update(ctx, "put job "+j.Name, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bJobs)
		var old memory.JobRecord
		found, err := getJSON(b, []byte(j.Name), &old)
		if err != nil {
			return err
		}
		rec := j
		rec.Created = now
		if found {
			rec.Created = old.Created
		}
		rec.Updated = now
		return putJSON(b, []byte(j.Name), rec)
	})
}

// GetJob returns the job named name; found is false if there is none.
func (s *Store) GetJob(ctx context.Context, name string) (memory.JobRecord, bool, error) {
	var j memory.JobRecord
	var found bool
	err := s.view(ctx, "get job "+name, func(tx *bbolt.Tx) error {
		var err error
		found, err = getJSON(tx.Bucket(bJobs), []byte(name), &j)
		return err
	})
	if err != nil {
		return memory.JobRecord{}, false, err
	}
	return j, found, nil
}

// ListJobs returns every job ordered by name.
func (s *Store) ListJobs(ctx context.Context) ([]memory.JobRecord, error) {
	out := []memory.JobRecord{}
	err := s.view(ctx, "list jobs", func(tx *bbolt.Tx) error {
		return tx.Bucket(bJobs).ForEach(func(k, v []byte) error {
			var j memory.JobRecord
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("decode job %s: %w", k, err)
			}
			out = append(out, j)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteJob removes a job and its run history; an unknown name yields an error
// wrapping ErrNotFound.
func (s *Store) DeleteJob(ctx context.Context, name string) error {
	return s.update(ctx, "delete job "+name, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bJobs)
		if b.Get([]byte(name)) == nil {
			return memory.ErrNotFound
		}
		if err := b.Delete([]byte(name)); err != nil {
			return err
		}
		if tx.Bucket(bRuns).Bucket([]byte(name)) != nil {
			return tx.Bucket(bRuns).DeleteBucket([]byte(name))
		}
		return nil
	})
}

// AddRun records a run of run.Job and returns its ID (unique across jobs).
// The job record itself need not exist (runs of config-defined jobs).
func (s *Store) AddRun(ctx context.Context, run memory.JobRun) (uint64, error) {
	if run.Job == "" {
		return 0, fmt.Errorf("memory: add run: empty job name")
	}
	var id uint64
	err := s.batch(ctx, "add run of "+run.Job, func(tx *bbolt.Tx) error {
		id = 0
		root := tx.Bucket(bRuns)
		seq, err := root.NextSequence()
		if err != nil {
			return fmt.Errorf("run sequence: %w", err)
		}
		b, err := root.CreateBucketIfNotExists([]byte(run.Job))
		if err != nil {
			return fmt.Errorf("runs bucket: %w", err)
		}
		r := run
		r.ID = seq
		if err := putJSON(b, u64(seq), r); err != nil {
			return err
		}
		id = seq
		return nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// UpdateRun replaces the run (run.Job, run.ID); an unknown run yields an error
// wrapping ErrNotFound.
func (s *Store) UpdateRun(ctx context.Context, run memory.JobRun) error {
	return s.update(ctx, fmt.Sprintf("update run %d of %s", run.ID, run.Job), func(tx *bbolt.Tx) error {
		b := tx.Bucket(bRuns).Bucket([]byte(run.Job))
		if b == nil || b.Get(u64(run.ID)) == nil {
			return memory.ErrNotFound
		}
		return putJSON(b, u64(run.ID), run)
	})
}

// ListRuns returns the runs of job, newest first, at most limit (<= 0: all).
func (s *Store) ListRuns(ctx context.Context, job string, limit int) ([]memory.JobRun, error) {
	out := []memory.JobRun{}
	err := s.view(ctx, "list runs of "+job, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bRuns).Bucket([]byte(job))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var r memory.JobRun
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode run %d: %w", fromU64(k), err)
			}
			out = append(out, r)
			if limit > 0 && len(out) == limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
