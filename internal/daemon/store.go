package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/postgres"
)

// OpenStore opens the memory.Store that config `storage.backend` names, with
// the config's retention: "bolt" (or empty, a Config built in code) is
// <data_dir>/switchboard.db; "postgres" is the database at
// storage.postgres.url (memory/postgres, migrated on open). The daemon and
// the CLI's store-backed commands open storage only through here.
func OpenStore(cfg *config.Config, log *slog.Logger) (memory.Store, error) {
	opts := memory.Options{
		Timeout:         time.Second,
		Logger:          log,
		DedupTTL:        cfg.Retention.DedupTTL,
		AuditMaxAge:     cfg.Retention.AuditMaxAge,
		AuditMaxRecords: cfg.Retention.AuditMaxRecords,
		RunsPerJob:      cfg.Retention.RunsPerJob,
	}
	switch b := cfg.Storage.Backend; b {
	case "", "bolt":
		// Adapters hand messages over one at a time; bolt's 10ms batch
		// window made each Accept wait it out (BENCHMARKS.md).
		opts.GroupCommit = true
		st, err := bolt.Open(cfg.DBPath(), opts)
		if err != nil {
			return nil, fmt.Errorf("open the data store: %w", err)
		}
		return st, nil
	case "postgres":
		// Connecting and migrating; the URL's connect_timeout bounds each try.
		ctx, cancel := context.WithTimeout(context.Background(), postgresOpenTimeout)
		defer cancel()
		st, err := postgres.Open(ctx, cfg.Storage.Postgres.URL.Value(), opts)
		if err != nil {
			return nil, fmt.Errorf("open the data store: %w", err)
		}
		return st, nil
	default:
		return nil, fmt.Errorf("open the data store: storage.backend %q is not available (allowed: bolt, postgres)", b)
	}
}

// postgresOpenTimeout bounds connecting to PostgreSQL and migrating its
// schema at start (a replica waits here while another one migrates).
const postgresOpenTimeout = 2 * time.Minute
