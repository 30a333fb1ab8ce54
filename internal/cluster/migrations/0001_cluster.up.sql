-- Cluster coordination (internal/cluster). Every expiry is compared with the
-- database's now(), never a replica's clock.

-- One row per replica process; last_seen is refreshed every lease_ttl/3.
CREATE TABLE cluster_replicas (
    id        text PRIMARY KEY,
    host      text NOT NULL DEFAULT '',
    started   timestamptz NOT NULL,
    last_seen timestamptz NOT NULL,
    ttl_ms    bigint NOT NULL
);

-- One row per lease name, kept after release so the fencing token only
-- grows. holder = '' means released.
CREATE TABLE cluster_leases (
    name     text PRIMARY KEY,
    holder   text NOT NULL,
    token    bigint NOT NULL,
    acquired timestamptz NOT NULL,
    expires  timestamptz NOT NULL
);

-- One row per fired schedule slot: the primary key makes each (job, slot)
-- fire once cluster-wide.
CREATE TABLE cluster_fires (
    job      text NOT NULL,
    slot     timestamptz NOT NULL,
    replica  text NOT NULL,
    fired_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job, slot)
);
CREATE INDEX cluster_fires_fired_at ON cluster_fires (fired_at);
