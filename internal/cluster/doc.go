// Package cluster owns the coordination of switchboard replicas that share
// one PostgreSQL database (`storage.backend: postgres`): named leases with
// fencing tokens, the replica registry behind `switchboard cluster status`,
// once-only schedule slots, and LISTEN/NOTIFY wake-ups. With the bolt
// backend there is one process and this package is not used.
//
// # Design
//
// Leases are rows of cluster_leases (name, holder, token, expires). A
// replica acquires a lease with one INSERT ... ON CONFLICT DO UPDATE that
// only takes over a row whose expiry has passed or that it already holds,
// so concurrent acquirers serialize on the row and exactly one wins. The
// database's now() is the only clock that decides expiry: replicas' wall
// clocks may disagree, and no comparison of two replicas' clocks is ever
// made. Rows are kept after release (with an empty holder), so the fencing
// token of a name strictly increases each time its holder changes; a live
// holder that acquires again keeps its token. Rows expired for a day are
// pruned (a name unused that long starts again at token 1; a holder that
// old is long gone, and Valid checks the holder's id as well).
//
// A holder must stop acting before its lease can expire unrenewed. Hold
// renews every TTL/3 and keeps a local deadline on the monotonic clock:
// the start of the last successful renew (or acquire) request plus TTL
// minus TTL/5. The database computed the expiry from its now() at or after
// that start, so the deadline falls before the expiry whatever the network
// did; at the deadline the work's context is canceled. That cancellation
// is the fence for work that cannot check a token (a platform connection);
// work that writes can also call Valid with its token just before the
// write, and a stale holder's token is refused.
//
// Wake-ups: a released lease is announced with NOTIFY so waiting replicas
// try at once rather than at their next poll (every TTL/5); NOTIFY is only
// an optimization, the poll alone is correct. Listen gives other packages
// the same mechanism on their own channel names (one dedicated connection
// per Listen, reconnected with backoff).
//
// Each replica that is not Passive writes a heartbeat row (every TTL/3) in
// cluster_replicas; a replica is alive while its last heartbeat is newer
// than its TTL. Rows of replicas gone for a day are pruned.
//
// Lease names are free-form: the daemon uses "scheduler", "telegram-poll"
// and "discord-shard-<i>"; per-session claims use "session:<key>".
//
// Schedules: Fire inserts (job, slot) into cluster_fires under its primary
// key, so of all replicas (and all leaders over time) exactly one fires a
// slot. Rows older than 30 days are pruned by the heartbeat.
//
// The schema is embedded and applied with golang-migrate (its own version
// table, cluster_schema_migrations, separate from the memory store's).
package cluster
