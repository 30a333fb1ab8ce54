package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// leaseChannel is the NOTIFY channel on which released leases are
// announced; the payload is {"lease": name, "by": replica}.
const leaseChannel = "switchboard_cluster_lease"

// TryAcquire tries once to take lease name for TTL. ok is false when a
// live lease of another replica holds it. The token strictly increases
// each time the holder changes (takeover after expiry, or after a
// release); a live holder acquiring again keeps its token and extends the
// expiry.
func (c *Cluster) TryAcquire(ctx context.Context, name string) (token int64, ok bool, err error) {
	err = c.pool.QueryRow(ctx, `
		INSERT INTO cluster_leases AS l (name, holder, token, acquired, expires)
		VALUES ($1, $2, 1, now(), now() + $3 * interval '1 millisecond')
		ON CONFLICT (name) DO UPDATE SET
			token = CASE WHEN l.holder = EXCLUDED.holder AND l.expires > now()
				THEN l.token ELSE l.token + 1 END,
			acquired = CASE WHEN l.holder = EXCLUDED.holder AND l.expires > now()
				THEN l.acquired ELSE now() END,
			holder = EXCLUDED.holder,
			expires = EXCLUDED.expires
		WHERE l.expires <= now() OR l.holder = EXCLUDED.holder
		RETURNING token`, name, c.id, c.ttl.Milliseconds()).Scan(&token)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("cluster: acquire lease %q: %w", name, c.wrap(err))
	}
	return token, true, nil
}

// Renew extends lease name by TTL from the database's now(). It is false
// when this replica no longer holds the lease with token (it expired, was
// released, or another replica took it over); an expired lease is never
// renewed, even if nobody took it: the holder already stopped acting.
func (c *Cluster) Renew(ctx context.Context, name string, token int64) (bool, error) {
	if f := c.renewFault.Load(); f != nil {
		if err := (*f)(name); err != nil {
			return false, fmt.Errorf("cluster: renew lease %q: %w", name, err)
		}
	}
	tag, err := c.pool.Exec(ctx, `
		UPDATE cluster_leases SET expires = now() + $4 * interval '1 millisecond'
		WHERE name = $1 AND holder = $2 AND token = $3 AND expires > now()`,
		name, c.id, token, c.ttl.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("cluster: renew lease %q: %w", name, c.wrap(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Release gives lease name up if this replica holds it with token, and
// wakes replicas waiting for it. Releasing a lease no longer held is not an
// error.
func (c *Cluster) Release(ctx context.Context, name string, token int64) error {
	_, err := c.pool.Exec(ctx, `
		WITH r AS (
			UPDATE cluster_leases SET holder = '', expires = now()
			WHERE name = $1 AND holder = $2 AND token = $3
			RETURNING name)
		SELECT pg_notify($4, json_build_object('lease', r.name, 'by', $2::text)::text) FROM r`,
		name, c.id, token, leaseChannel)
	if err != nil {
		return fmt.Errorf("cluster: release lease %q: %w", name, c.wrap(err))
	}
	return nil
}

// Valid is the fence check: true while this replica holds lease name with
// token and the lease has not expired by the database's clock. A stale
// holder (its lease expired or taken over) gets false.
func (c *Cluster) Valid(ctx context.Context, name string, token int64) (bool, error) {
	var ok bool
	err := c.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM cluster_leases
			WHERE name = $1 AND holder = $2 AND token = $3 AND expires > now())`,
		name, c.id, token).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("cluster: check lease %q: %w", name, c.wrap(err))
	}
	return ok, nil
}

// Fire claims schedule slot (job, slot) for this replica: true means this
// replica is the one that fires it; false means some replica already did
// (now or under an earlier leader). Slots are compared to the microsecond.
func (c *Cluster) Fire(ctx context.Context, job string, slot time.Time) (bool, error) {
	tag, err := c.pool.Exec(ctx, `
		INSERT INTO cluster_fires (job, slot, replica) VALUES ($1, $2, $3)
		ON CONFLICT (job, slot) DO NOTHING`, job, slot.UTC(), c.id)
	if err != nil {
		return false, fmt.Errorf("cluster: fire %s at %s: %w", job, slot.UTC().Format(time.RFC3339), c.wrap(err))
	}
	return tag.RowsAffected() == 1, nil
}
