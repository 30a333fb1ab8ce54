-- Switchboard storage schema, version 1 (memory/postgres). Applied by
-- golang-migrate under its advisory lock; never edit a released migration,
-- add the next numbered pair instead.

-- Sessions: one row per session key, with the counters SessionMeta shows.
-- Turns and archives hang off the surrogate id, so MoveSession renames a
-- key in place.
CREATE TABLE sessions (
    id                bigserial PRIMARY KEY,
    key               text        NOT NULL UNIQUE,
    created           timestamptz NOT NULL,
    updated           timestamptz NOT NULL,
    last_user_message timestamptz,
    turns             integer     NOT NULL DEFAULT 0,
    messages          integer     NOT NULL DEFAULT 0,
    prompt_tokens     bigint      NOT NULL DEFAULT 0,
    completion_tokens bigint      NOT NULL DEFAULT 0,
    total_tokens      bigint      NOT NULL DEFAULT 0,
    persona           text        NOT NULL DEFAULT '',
    last_turn_id      text        NOT NULL DEFAULT '',
    archive_seq       integer     NOT NULL DEFAULT 0
);


-- Archives: one row per reset, holding the session's metadata at the reset.
CREATE TABLE archives (
    id         bigserial PRIMARY KEY,
    session_id bigint      NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    name       text        NOT NULL,
    archived   timestamptz NOT NULL,
    meta       json        NOT NULL,
    UNIQUE (session_id, name)
);

-- Turns: a whole turn per row, its messages as one JSON array (json, not
-- jsonb: kept verbatim, and \u0000 in a tool result is accepted). A live
-- turn has archive_id NULL; a reset moves the live turns into an archive.
CREATE TABLE turns (
    id                bigserial PRIMARY KEY,
    session_id        bigint  NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    archive_id        bigint  REFERENCES archives (id) ON DELETE CASCADE,
    turn_id           text    NOT NULL,
    started           timestamptz,
    ended             timestamptz,
    finish_reason     text    NOT NULL DEFAULT '',
    prompt_tokens     bigint  NOT NULL DEFAULT 0,
    completion_tokens bigint  NOT NULL DEFAULT 0,
    total_tokens      bigint  NOT NULL DEFAULT 0,
    sources           bigint[],
    answer            text    NOT NULL DEFAULT '',
    n_messages        integer NOT NULL CHECK (n_messages > 0),
    messages          json    NOT NULL
);
CREATE INDEX turns_live ON turns (session_id, id) WHERE archive_id IS NULL;
CREATE INDEX turns_archived ON turns (archive_id, id) WHERE archive_id IS NOT NULL;

-- Dedup: (channel, message id) blocks a redelivery until expires. The
-- primary key makes two replicas accepting the same message accept it once.
CREATE TABLE dedup (
    channel    text        NOT NULL,
    message_id text        NOT NULL,
    expires    timestamptz NOT NULL,
    PRIMARY KEY (channel, message_id)
);
CREATE INDEX dedup_expires ON dedup (expires);

-- Inbox: accepted messages not yet finished (pending: run the turn;
-- answered: deliver the stored answer). session_key lets a replica claim a
-- session's items.
CREATE TABLE inbox (
    id          bigserial PRIMARY KEY,
    channel     text        NOT NULL,
    message_id  text        NOT NULL DEFAULT '',
    session_key text        NOT NULL DEFAULT '',
    payload     bytea,
    received    timestamptz NOT NULL,
    state       text        NOT NULL CHECK (state IN ('pending', 'answered')),
    turn_id     text        NOT NULL DEFAULT '',
    answer      text        NOT NULL DEFAULT ''
);
CREATE INDEX inbox_session ON inbox (session_key, id);

-- Outbox: a send intent per chunk, completed by its receipt.
CREATE TABLE outbox (
    id          bigserial PRIMARY KEY,
    target      text        NOT NULL,
    turn_id     text        NOT NULL DEFAULT '',
    chunk       integer     NOT NULL DEFAULT 0,
    text        text        NOT NULL DEFAULT '',
    status      text        NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    platform_id text        NOT NULL DEFAULT '',
    error       text        NOT NULL DEFAULT '',
    created     timestamptz NOT NULL,
    updated     timestamptz NOT NULL
);
CREATE INDEX outbox_turn ON outbox (turn_id, id);
CREATE INDEX outbox_pending ON outbox (id) WHERE status = 'pending';
CREATE INDEX outbox_created ON outbox (created);

-- Notes: ids unique across scopes (one sequence).
CREATE TABLE notes (
    id      bigserial PRIMARY KEY,
    scope   text        NOT NULL,
    text    text        NOT NULL,
    created timestamptz NOT NULL
);
CREATE INDEX notes_scope ON notes (scope, id);

-- Jobs and their runs; runs need no job row (config-defined jobs).
CREATE TABLE jobs (
    name    text PRIMARY KEY,
    spec    json,
    created timestamptz NOT NULL,
    updated timestamptz NOT NULL
);

CREATE TABLE runs (
    id         bigserial PRIMARY KEY,
    job        text NOT NULL,
    scheduled  timestamptz,
    started    timestamptz,
    finished   timestamptz,
    status     text NOT NULL DEFAULT '',
    error      text NOT NULL DEFAULT '',
    deliveries json
);
CREATE INDEX runs_job ON runs (job, id);

CREATE TABLE audit (
    id      bigserial PRIMARY KEY,
    time    timestamptz NOT NULL,
    actor   text NOT NULL DEFAULT '',
    action  text NOT NULL DEFAULT '',
    session text NOT NULL DEFAULT '',
    detail  text NOT NULL DEFAULT '',
    error   text NOT NULL DEFAULT ''
);
CREATE INDEX audit_time ON audit (time);
CREATE INDEX audit_session ON audit (session, id);

CREATE TABLE kv (
    key   text PRIMARY KEY,
    value bytea NOT NULL
);
