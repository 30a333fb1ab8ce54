package cluster

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationsTable is golang-migrate's bookkeeping table for this schema;
// the memory store keeps its own (schema_migrations), and the advisory
// lock golang-migrate takes is derived from the table name, so the two
// migrate independently.
const migrationsTable = "cluster_schema_migrations"

// migrateUp applies the embedded migrations under golang-migrate's
// advisory lock.
func migrateUp(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	src, err := iofs.New(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("schema: read embedded migrations: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	drv, err := migratepgx.WithInstance(db, &migratepgx.Config{MigrationsTable: migrationsTable})
	if err != nil {
		_ = src.Close()
		_ = db.Close()
		return fmt.Errorf("schema: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		_ = src.Close()
		_ = drv.Close()
		return fmt.Errorf("schema: %w", err)
	}
	defer m.Close()
	m.Log = migrateLog{log}
	// Up has no context: stop it when ctx ends.
	stop := context.AfterFunc(ctx, func() {
		select {
		case m.GracefulStop <- true:
		default:
		}
	})
	defer stop()
	switch err := m.Up(); {
	case errors.Is(err, migrate.ErrNoChange):
		return nil
	case err != nil:
		return fmt.Errorf("cluster schema migration: %w", err)
	}
	v, _, _ := m.Version()
	log.Info("cluster schema migrated", "version", v)
	return nil
}

// migrateLog sends golang-migrate's messages to slog at debug level.
type migrateLog struct{ log *slog.Logger }

func (l migrateLog) Printf(format string, v ...any) {
	l.log.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "migrate")
}

func (l migrateLog) Verbose() bool { return false }
