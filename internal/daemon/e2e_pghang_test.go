package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
)

// Attack (issue 18): the database host hangs (every PostgreSQL process
// stopped, connections open, nothing answers) while a user writes. The
// daemon neither crashes nor loses the message: once the database answers
// again, the message is answered exactly once.
func TestPostgresHangLosesNothing(t *testing.T) {
	bins, err := pgtest.FindBinaries()
	if err != nil {
		t.Skipf("PostgreSQL binaries not found (apt-get install postgresql): %v", err)
	}
	c, err := pgtest.NewCluster(bins, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	url, err := c.CreateDatabase(context.Background(), "hang")
	if err != nil {
		t.Fatal(err)
	}
	llm := fakellm.Start(t, fakellm.Echo())
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	cfg.Storage.Backend = "postgres"
	cfg.Storage.Postgres.URL = config.NewSecret(url)
	d := startDaemon(t, cfg, tg.Token(), "")
	tg.UserSays(tgUser, "before the hang")
	tgWaitText(t, tg, tgUser, 1, is("echo: before the hang"))

	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = c.Resume()
		}
	}()
	tg.UserSays(tgUser, "during the hang")
	time.Sleep(3 * time.Second)
	if n := len(tg.Sent(tgUser)); n != 1 {
		t.Fatalf("%d bot messages while the database hung, want still 1", n)
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	tgWaitText(t, tg, tgUser, 2, is("echo: during the hang"))
	time.Sleep(500 * time.Millisecond)
	if n := len(tg.Sent(tgUser)); n != 2 {
		t.Fatalf("%d bot messages after the database came back, want 2 (each question answered once): %+v", n, tg.Sent(tgUser))
	}
	d.stop()
}
