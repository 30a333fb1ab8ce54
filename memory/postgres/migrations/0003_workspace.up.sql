-- The workspace (issue 31): files per chat (session key). One row a file,
-- its content as bytea; rows of one chat are changed only under that chat's
-- transaction-scoped advisory lock (workspace.go), so the bounds checked
-- against the chat's rows hold for the state the transaction commits.
CREATE TABLE workspace_files (
    chat     text        COLLATE "C" NOT NULL,
    path     text        COLLATE "C" NOT NULL,
    size     bigint      NOT NULL,
    sha256   text        NOT NULL,
    modified timestamptz NOT NULL,
    mode     integer     NOT NULL DEFAULT 420,
    content  bytea       NOT NULL,
    PRIMARY KEY (chat, path)
);
