package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-bot/switchboard/internal/redact"
)

// DefaultLeaseTTL is cluster.lease_ttl's default.
const DefaultLeaseTTL = 15 * time.Second

// Options configure Open.
type Options struct {
	// ReplicaID names this process in leases and status; default
	// "<hostname>-<pid>-<random>".
	ReplicaID string
	// LeaseTTL is how long a lease lives unrenewed (cluster.lease_ttl);
	// default 15s. A dead replica's leases are taken over within it.
	LeaseTTL time.Duration
	// Logger receives lease changes and connection trouble; default
	// slog.Default().
	Logger *slog.Logger
	// Passive opens the cluster without registering a replica (no
	// heartbeat row): for `switchboard cluster status` and other tools
	// that only look.
	Passive bool
}

// Cluster is one replica's handle on the shared coordination tables. It is
// safe for concurrent use. Close it after every Hold and Listen returned.
type Cluster struct {
	pool    *pgxpool.Pool
	id      string
	ttl     time.Duration
	log     *slog.Logger
	path    string   // the URL without secrets
	secrets []string // the password and its pieces (redact.Passwords), scrubbed from every error

	stop    chan struct{}  // closed by Close: background goroutines end
	bg      sync.WaitGroup // background goroutines (heartbeat, wake listener)
	wake    wakeHub
	closing sync.Once

	// renewFault, when set (tests), makes Renew fail with its error.
	renewFault atomic.Pointer[func(name string) error]
}

// Open connects to the database at url, applies the cluster schema (under
// golang-migrate's advisory lock, so replicas starting together migrate
// once) and, unless o.Passive, registers this replica and starts its
// heartbeat. ctx bounds connecting and migrating. Errors never contain the
// password.
func Open(ctx context.Context, url string, o Options) (*Cluster, error) {
	o = o.withDefaults()
	if url == "" {
		return nil, errors.New("cluster: open: empty database URL")
	}
	c := &Cluster{id: o.ReplicaID, ttl: o.LeaseTTL, log: o.Logger, path: redact.URL(url), stop: make(chan struct{})}
	if !strings.Contains(url, "://") {
		c.path = "(key=value DSN)"
	}
	c.wake.init()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("cluster: open %s: %w", c.path, redact.Error(err))
	}
	c.secrets = append(redact.Passwords(url), cfg.ConnConfig.Password)
	if cfg.MaxConns < 4 {
		cfg.MaxConns = 4
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, c.openErr(err)
	}
	c.pool = pool
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, c.openErr(err)
	}
	if err := migrateUp(ctx, pool, c.log); err != nil {
		pool.Close()
		return nil, c.openErr(err)
	}
	if !o.Passive {
		if err := c.beat(ctx, true); err != nil {
			pool.Close()
			return nil, c.openErr(err)
		}
		c.bg.Add(1)
		go c.heartbeat()
		c.log.Info("cluster replica registered", "replica", c.id, "lease_ttl", c.ttl)
	}
	return c, nil
}

func (o Options) withDefaults() Options {
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ReplicaID == "" {
		o.ReplicaID = defaultReplicaID()
	}
	return o
}

// defaultReplicaID is "<hostname>-<pid>-<8 hex digits>": unique even when
// a container restarts with the same hostname and pid.
func defaultReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Close stops the heartbeat, removes this replica's row (a graceful exit is
// not shown as a dead replica) and closes the pool. Leases are released by
// the Holds that took them. It is idempotent.
func (c *Cluster) Close() {
	c.closing.Do(func() {
		close(c.stop)
		c.bg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl/3)
		defer cancel()
		if _, err := c.pool.Exec(ctx, `DELETE FROM cluster_replicas WHERE id = $1`, c.id); err != nil {
			c.log.Debug("cluster: remove replica row", "err", c.wrap(err))
		}
		c.pool.Close()
	})
}

// ReplicaID is this replica's name in leases and status.
func (c *Cluster) ReplicaID() string { return c.id }

// TTL is the lease time-to-live.
func (c *Cluster) TTL() time.Duration { return c.ttl }

// Path is the database URL without its password.
func (c *Cluster) Path() string { return c.path }

// stopCtx is a context canceled by Close, for background goroutines.
func (c *Cluster) stopCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// heartbeat refreshes the replica row every TTL/3 until Close, and now and
// then prunes rows of replicas gone for a day and fires older than 30 days.
func (c *Cluster) heartbeat() {
	defer c.bg.Done()
	ctx, cancel := c.stopCtx()
	defer cancel()
	t := time.NewTicker(c.ttl / 3)
	defer t.Stop()
	for n := 0; ; n++ {
		if n%50 == 0 {
			c.prune(ctx)
		}
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		bctx, bcancel := context.WithTimeout(ctx, c.ttl/3)
		if err := c.beat(bctx, false); err != nil && ctx.Err() == nil {
			c.log.Warn("cluster heartbeat failed", "replica", c.id, "err", err)
		}
		bcancel()
	}
}

// beat upserts the replica row; first also sets its start time.
func (c *Cluster) beat(ctx context.Context, first bool) error {
	host, _ := os.Hostname()
	_, err := c.pool.Exec(ctx, `
		INSERT INTO cluster_replicas (id, host, started, last_seen, ttl_ms)
		VALUES ($1, $2, now(), now(), $3)
		ON CONFLICT (id) DO UPDATE SET last_seen = now(), ttl_ms = EXCLUDED.ttl_ms,
			started = CASE WHEN $4 THEN now() ELSE cluster_replicas.started END`,
		c.id, host, c.ttl.Milliseconds(), first)
	return c.wrap(err)
}

func (c *Cluster) prune(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.ttl)
	defer cancel()
	for _, q := range []string{
		`DELETE FROM cluster_replicas WHERE last_seen < now() - interval '1 day'`,
		`DELETE FROM cluster_leases WHERE expires < now() - interval '1 day'`,
		`DELETE FROM cluster_fires WHERE fired_at < now() - interval '30 days'`,
	} {
		if _, err := c.pool.Exec(ctx, q); err != nil && ctx.Err() == nil {
			c.log.Debug("cluster prune", "err", c.wrap(err))
		}
	}
}

func (c *Cluster) openErr(err error) error {
	return fmt.Errorf("cluster: open %s: %w", c.path, redact.Error(err, c.secrets...))
}

// wrap hides the password in a database error.
func (c *Cluster) wrap(err error) error {
	if err == nil {
		return nil
	}
	return redact.Error(err, c.secrets...)
}
