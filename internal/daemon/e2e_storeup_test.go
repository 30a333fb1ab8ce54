package daemon_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// storeTTL is cluster.lease_ttl in the store health tests: the probe runs
// every lease_ttl/3.
const storeTTL = time.Second

// storeView is what an operator sees of the store: /readyz, the store line
// of /status and the switchboard_storage_up gauge.
type storeView struct {
	code          int
	ready, status string
	up            string // the gauge's line
}

func (r *rig) storeView() storeView {
	r.t.Helper()
	var v storeView
	v.code, v.ready = r.readyz()
	_, status := adminCall(r.t, r, http.MethodGet, "/admin/status", nil)
	v.status = grepLines(status, "storage:")
	for _, l := range strings.Split(r.metrics(), "\n") {
		if strings.HasPrefix(l, "switchboard_storage_up ") {
			v.up = l
		}
	}
	return v
}

// waitStore polls until the store is shown down (want false) or up (true)
// everywhere: /readyz, /status and the gauge. The deadline only detects a
// hang: the probe runs every lease_ttl/3.
func waitStore(t *testing.T, r *rig, up bool, why ...string) storeView {
	t.Helper()
	var v storeView
	deadline := time.Now().Add(waitLong)
	for {
		v = r.storeView()
		ok := v.code == http.StatusOK && v.up == "switchboard_storage_up 1" && strings.Contains(v.status, ": ok")
		if !up {
			ok = v.code == http.StatusServiceUnavailable && strings.Contains(v.ready, "store: unavailable since") &&
				v.up == "switchboard_storage_up 0" && strings.Contains(v.status, ": unavailable since")
			for _, w := range why {
				ok = ok && strings.Contains(v.ready, w) && strings.Contains(v.status, w)
			}
		}
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s the store is not shown up=%v (reason containing %q):\n/readyz %d %q\n/status %q\nmetric %q",
				waitLong, up, why, v.code, v.ready, v.status, v.up)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Issue 27: with the database stopped a replica used to answer /readyz 200
// "ready" indefinitely, so a load balancer kept sending it webhooks it
// could not accept. Within cluster.lease_ttl of PostgreSQL going away
// /readyz answers 503 naming the store and the cause, /status shows it and
// switchboard_storage_up is 0; once the database is back everything
// recovers by itself.
func TestReadyzFollowsPostgresAvailability(t *testing.T) {
	bins, err := pgtest.FindBinaries()
	if err != nil {
		t.Skipf("PostgreSQL binaries not found (apt-get install postgresql): %v", err)
	}
	c, err := pgtest.NewCluster(bins, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	url, err := c.CreateDatabase(context.Background(), "readyz")
	if err != nil {
		t.Fatal(err)
	}
	llm := fakellm.Start(t, fakellm.Echo())
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	cfg.Storage.Backend = "postgres"
	cfg.Storage.Postgres.URL = config.NewSecret(url)
	cfg.Cluster.LeaseTTL = storeTTL
	d := startDaemon(t, cfg, tg.Token())
	waitStore(t, d, true)

	if err := c.Halt(); err != nil {
		t.Fatal(err)
	}
	down := waitStore(t, d, false, "PostgreSQL")
	t.Logf("database stopped: /readyz %q; /status %q", down.ready, down.status)
	if !strings.Contains(d.log.String(), "data store unavailable") {
		t.Error("no log line says the data store is unavailable")
	}

	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	waitStore(t, d, true)
	tg.UserSays(tgUser, "after the outage")
	tgWaitText(t, tg, tgUser, 1, is("echo: after the outage"))
	if !strings.Contains(d.log.String(), "data store available again") {
		t.Error("no log line says the data store is back")
	}
}

// Issue 27, bolt: the database file moved away or replaced underneath the
// running daemon (a cleanup script, a restore done in the wrong order)
// means everything written from then on is lost at the next start. /readyz,
// /status and switchboard_storage_up say so within cluster.lease_ttl, and
// recover once the file is back in place.
func TestReadyzFollowsBoltFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		induce func(t *testing.T, db, aside string)
		why    string
	}{
		{"moved away", func(t *testing.T, db, aside string) {
			if err := os.Rename(db, aside); err != nil {
				t.Fatal(err)
			}
		}, "is gone"},
		{"replaced by a copy", func(t *testing.T, db, aside string) {
			data, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(db, aside); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(db, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "another file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Echo())
			tg := faketelegram.New(t, faketelegram.Options{})
			cfg := telegramConfig(t, llm, tg)
			cfg.Cluster.LeaseTTL = storeTTL
			d := startDaemon(t, cfg, tg.Token())
			waitStore(t, d, true)
			db := filepath.Join(cfg.Bot.DataDir, bolt.FileName)
			aside := db + ".aside"

			tc.induce(t, db, aside)
			down := waitStore(t, d, false, db, tc.why)
			t.Logf("/readyz %q", down.ready)

			if err := os.Rename(aside, db); err != nil {
				t.Fatal(err)
			}
			waitStore(t, d, true)
			tg.UserSays(tgUser, "file back")
			tgWaitText(t, tg, tgUser, 1, is("echo: file back"))
		})
	}
}
