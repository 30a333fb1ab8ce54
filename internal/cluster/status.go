package cluster

import (
	"context"
	"fmt"
	"time"
)

// Status is the cluster as the database sees it.
type Status struct {
	// ReplicaID is the replica that asked (empty for a Passive handle's
	// unregistered id, which is still reported).
	ReplicaID string
	// Now is the database's clock, against which Alive and Held are judged.
	Now      time.Time
	Replicas []Replica
	Leases   []Lease
}

// Replica is one registered replica.
type Replica struct {
	ID       string
	Host     string
	Started  time.Time
	LastSeen time.Time
	// Alive: the last heartbeat is newer than the replica's lease TTL.
	Alive bool
}

// Lease is one lease row.
type Lease struct {
	Name string
	// Holder is the replica holding it ("" when released).
	Holder   string
	Token    int64
	Acquired time.Time
	Expires  time.Time
	// Held: a holder and an expiry in the future.
	Held bool
}

// AliveReplicas counts the replicas alive.
func (s Status) AliveReplicas() int {
	n := 0
	for _, r := range s.Replicas {
		if r.Alive {
			n++
		}
	}
	return n
}

// Status lists the replicas (alive ones first, by id) and the leases (by
// name): every held lease, and the free ones except per-session claims
// ("session:<key>", one per chat ever claimed).
func (c *Cluster) Status(ctx context.Context) (Status, error) {
	st := Status{ReplicaID: c.id}
	if err := c.pool.QueryRow(ctx, `SELECT now()`).Scan(&st.Now); err != nil {
		return Status{}, fmt.Errorf("cluster: status: %w", c.wrap(err))
	}
	reps, err := c.Replicas(ctx)
	if err != nil {
		return Status{}, err
	}
	st.Replicas = reps
	rows, err := c.pool.Query(ctx, `
		SELECT name, holder, token, acquired, expires, holder <> '' AND expires > now() AS held
		FROM cluster_leases
		WHERE (holder <> '' AND expires > now()) OR name NOT LIKE 'session:%'
		ORDER BY name`)
	if err != nil {
		return Status{}, fmt.Errorf("cluster: status: %w", c.wrap(err))
	}
	defer rows.Close()
	for rows.Next() {
		var l Lease
		if err := rows.Scan(&l.Name, &l.Holder, &l.Token, &l.Acquired, &l.Expires, &l.Held); err != nil {
			return Status{}, fmt.Errorf("cluster: status: %w", c.wrap(err))
		}
		st.Leases = append(st.Leases, l)
	}
	if err := rows.Err(); err != nil {
		return Status{}, fmt.Errorf("cluster: status: %w", c.wrap(err))
	}
	return st, nil
}

// Replicas lists the registered replicas, alive ones first, by id.
func (c *Cluster) Replicas(ctx context.Context) ([]Replica, error) {
	rows, err := c.pool.Query(ctx, `
		SELECT id, host, started, last_seen, last_seen > now() - ttl_ms * interval '1 millisecond' AS alive
		FROM cluster_replicas ORDER BY alive DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("cluster: replicas: %w", c.wrap(err))
	}
	defer rows.Close()
	var out []Replica
	for rows.Next() {
		var r Replica
		if err := rows.Scan(&r.ID, &r.Host, &r.Started, &r.LastSeen, &r.Alive); err != nil {
			return nil, fmt.Errorf("cluster: replicas: %w", c.wrap(err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: replicas: %w", c.wrap(err))
	}
	return out, nil
}
