-- Background tasks (issue 31). The record is kept whole in rec (JSON, the
-- shape of memory.TaskRecord); the columns beside it are what the queries
-- select on. Every change takes the row FOR UPDATE; creating and claiming
-- also take the advisory lock of the tasks (memory/postgres/tasks.go), so
-- the per-chat and running limits are counted by one writer at a time.
CREATE TABLE tasks (
    id        bigserial PRIMARY KEY,
    chat      text COLLATE "C" NOT NULL,
    state     text NOT NULL,
    delivered boolean NOT NULL DEFAULT false,
    rec       jsonb NOT NULL
);
CREATE INDEX tasks_chat ON tasks (chat, id);
CREATE INDEX tasks_open ON tasks (state, id) WHERE state IN ('queued', 'running') OR NOT delivered;
CREATE INDEX tasks_key ON tasks ((rec->>'key')) WHERE rec ? 'key';
