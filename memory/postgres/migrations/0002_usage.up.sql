-- The usage book (issue 30): a turn keeps its persona, job and tokens per
-- model; usage_daily sums tokens per day (YYYY-MM-DD in the bot's timezone),
-- chat (session key), persona, job and model, written in the turn's own
-- transaction. Rows of one chat are only ever updated by that chat's turn
-- (one at a time), so commits of different chats never wait on each other;
-- a day's total is a sum over the day's rows (an index range scan).
ALTER TABLE turns
    ADD COLUMN persona text NOT NULL DEFAULT '',
    ADD COLUMN job     text NOT NULL DEFAULT '',
    ADD COLUMN models  json;

CREATE TABLE usage_daily (
    day               text   COLLATE "C" NOT NULL,
    chat              text   COLLATE "C" NOT NULL,
    persona           text   COLLATE "C" NOT NULL DEFAULT '',
    job               text   COLLATE "C" NOT NULL DEFAULT '',
    model             text   COLLATE "C" NOT NULL DEFAULT '',
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (day, chat, persona, job, model)
);
