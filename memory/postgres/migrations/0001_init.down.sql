DROP TABLE IF EXISTS kv, audit, runs, jobs, notes, outbox, inbox, dedup, turns, archives, sessions;
