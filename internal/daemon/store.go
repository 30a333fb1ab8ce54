package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// OpenStore opens the memory.Store that config `storage.backend` names, with
// the config's retention: "bolt" (or empty, a Config built in code) is
// <data_dir>/switchboard.db. The daemon and the CLI's store-backed commands
// open storage only through here.
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
	default:
		return nil, fmt.Errorf("open the data store: storage.backend %q is not available (allowed: bolt; postgres comes in a later release)", b)
	}
}
