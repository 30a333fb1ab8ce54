package daemon_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/postgres"
)

// Issue 18: with `storage.backend: postgres` the daemon keeps everything in
// the database: a Telegram message is answered, the turn is in the
// database, a second daemon on the same database (after the first stopped)
// continues the conversation with its history, and neither daemon's log
// nor the store's Path shows the database password.
func TestPostgresBackendAnswersAndKeepsHistory(t *testing.T) {
	const pw = "pg-pass-7f3a9c1e-do-not-print"
	url := strings.Replace(pgtest.Start(t), "postgres://postgres@", "postgres://postgres:"+pw+"@", 1)
	llm := fakellm.Start(t, fakellm.Echo())
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	cfg.Storage.Backend = "postgres"
	cfg.Storage.Postgres.URL = config.NewSecret(url)

	d := startDaemon(t, cfg, tg.Token(), pw)
	if p := d.d.Store().Path(); strings.Contains(p, pw) {
		t.Errorf("store Path shows the password: %q", p)
	}
	if _, ok := d.d.Store().(*postgres.Store); !ok {
		t.Fatalf("storage.backend postgres opened %T", d.d.Store())
	}
	tg.UserSays(tgUser, "first question")
	tgWaitText(t, tg, tgUser, 1, is("echo: first question"))
	d.stop()

	// A second daemon on the same database: the conversation goes on.
	d2 := startDaemon(t, cfg, tg.Token(), pw)
	tg.UserSays(tgUser, "second question")
	tgWaitText(t, tg, tgUser, 2, is("echo: second question"))
	reqs := llm.Requests()
	var history []string
	for _, m := range reqs[len(reqs)-1].Body.Messages {
		history = append(history, fakellm.MessageText(m))
	}
	if !strings.Contains(strings.Join(history, "\n"), "echo: first question") {
		t.Errorf("the second daemon's model call lacks the history kept in the database: %q", history)
	}
	d2.stop()

	st, err := postgres.Open(context.Background(), url, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	turns, err := st.SessionTurns(context.Background(), "telegram:4242")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[1].Answer != "echo: second question" {
		t.Errorf("turns in the database = %+v, want both answered turns", turns)
	}
	if items, _ := st.InboxPending(context.Background()); len(items) != 0 {
		t.Errorf("inbox after both answers = %+v, want empty", items)
	}
}
