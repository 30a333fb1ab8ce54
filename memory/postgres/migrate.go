package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-bot/switchboard/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationsTable is golang-migrate's bookkeeping table.
const migrationsTable = "schema_migrations"

// SchemaVersion is the newest migration this binary carries.
func SchemaVersion() (uint, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return 0, err
	}
	var versions []int
	for _, e := range entries {
		n, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		v, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		return 0, errors.New("no migrations embedded")
	}
	sort.Ints(versions)
	return uint(versions[len(versions)-1]), nil
}

// migrateUp applies the embedded migrations with golang-migrate. The pgx/v5
// driver holds a PostgreSQL advisory lock (on one connection) while it
// reads and changes the version, so replicas starting together migrate once;
// the others wait and then find nothing to do. A database already at a newer
// version than this binary knows is refused.
func migrateUp(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	latest, err := SchemaVersion()
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if cur, dirty, found, err := readVersion(ctx, pool); err != nil {
		return err
	} else if found && cur > latest {
		return fmt.Errorf("database schema version %d was written by a newer switchboard (this one knows up to %d)", cur, latest)
	} else if found && cur == latest && !dirty {
		return nil // the common start: nothing to do, no lock taken
	}
	v, changed, err := pgmigrate.Up(ctx, pool, migrations, "migrations", migrationsTable, log)
	if err != nil {
		return fmt.Errorf("schema migration: %w", err)
	}
	if changed {
		log.Info("memory schema migrated", "version", v)
	}
	return nil
}

// readVersion reads golang-migrate's version row; found is false on a
// database it never ran on.
func readVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (version uint, dirty, found bool, err error) {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", migrationsTable).Scan(&exists); err != nil {
		return 0, false, false, fmt.Errorf("schema version: %w", err)
	}
	if !exists {
		return 0, false, false, nil
	}
	var v int64
	err = q.QueryRow(ctx, "SELECT version, dirty FROM "+migrationsTable+" LIMIT 1").Scan(&v, &dirty)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, false, nil
	}
	if err != nil {
		return 0, false, false, fmt.Errorf("schema version: %w", err)
	}
	return uint(v), dirty, true, nil
}
