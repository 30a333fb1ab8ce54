package cluster

import (
	"context"
	"embed"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-bot/switchboard/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationsTable is golang-migrate's bookkeeping table for this schema;
// the memory store keeps its own (schema_migrations), and the advisory
// lock golang-migrate takes is derived from the table name, so the two
// migrate independently.
const migrationsTable = "cluster_schema_migrations"

// migrateUp applies the embedded migrations (internal/pgmigrate: under
// golang-migrate's advisory lock).
func migrateUp(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	v, changed, err := pgmigrate.Up(ctx, pool, migrations, "migrations", migrationsTable, log)
	if err != nil {
		return fmt.Errorf("cluster schema migration: %w", err)
	}
	if changed {
		log.Info("cluster schema migrated", "version", v)
	}
	return nil
}
