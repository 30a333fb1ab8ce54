// Package pgmigrate applies a set of embedded SQL migrations to a PostgreSQL
// database with golang-migrate (iofs source, pgx/v5 driver). The driver
// holds an advisory lock derived from the bookkeeping table's name while it
// reads and changes the version, so replicas starting together migrate once
// and sets with different tables (the memory store's, the cluster's)
// migrate independently. It owns nothing else: each schema's package embeds
// its files and names its table.
package pgmigrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// Up applies the migrations in dir of fsys, recording them in table. It
// returns the version reached and whether anything was applied. Up stops
// (gracefully, between migrations) when ctx ends.
func Up(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, dir, table string, log *slog.Logger) (uint, bool, error) {
	src, err := iofs.New(fsys, dir)
	if err != nil {
		return 0, false, fmt.Errorf("read embedded migrations: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	drv, err := migratepgx.WithInstance(db, &migratepgx.Config{MigrationsTable: table})
	if err != nil {
		_ = src.Close()
		_ = db.Close()
		return 0, false, err
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		_ = src.Close()
		_ = drv.Close()
		return 0, false, err
	}
	defer m.Close()
	m.Log = logger{log}
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
		v, _, _ := m.Version()
		return v, false, nil
	case err != nil:
		return 0, false, err
	}
	v, _, _ := m.Version()
	return v, true, nil
}

// logger sends golang-migrate's messages to slog at debug level.
type logger struct{ log *slog.Logger }

func (l logger) Printf(format string, v ...any) {
	l.log.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "migrate")
}

func (l logger) Verbose() bool { return false }
