package ui_test

// The overview's Cluster block (replicas on PostgreSQL) and what the
// console does when it refuses to serve.

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
)

// With storage.backend postgres the overview shows the cluster: this
// replica alive and the scheduler lease it holds, live too; the database
// URL and its password appear nowhere.
func TestOverviewShowsTheClusterWithReplicas(t *testing.T) {
	const pw = "pg-console-pass-5c2e-do-not-print"
	url := strings.Replace(pgtest.Start(t), "postgres://postgres@", "postgres://postgres:"+pw+"@", 1)
	t.Setenv("SB_CONSOLE_PG_URL", url)
	r := startConsole(t, cOptions{Extra: `storage:
  backend: postgres
  postgres:
    url: ${SB_CONSOLE_PG_URL}
cluster:
  lease_ttl: 1s
`})
	r.secrets = append(r.secrets, pw)
	if r.d.Cluster() == nil {
		t.Fatal("the daemon runs without a cluster on postgres")
	}
	id := r.d.Cluster().ReplicaID()
	c := newClient(t, r.base)
	c.login(cAdminToken)
	row := regexp.MustCompile(`(?s)<tr data-replica="` + regexp.QuoteMeta(id) + `">.*?</tr>`)
	var home resp
	cEventually(t, "the overview showing this replica holding the scheduler lease", func() bool {
		home = c.get("/ui/")
		m := row.FindString(home.Body)
		return strings.Contains(m, "(this)") && strings.Contains(m, "alive") && strings.Contains(m, "scheduler")
	})
	if !strings.Contains(home.Body, `<h2>Cluster</h2>`) || !strings.Contains(home.Body, "1 of 1 replicas alive") {
		t.Errorf("the overview lacks the cluster summary:\n%s", home.Body)
	}
	live := nextEvent(t, c.stream("/ui/live/overview"), "overview")
	if !strings.Contains(live.Data, `data-replica="`+id+`"`) {
		t.Errorf("the live overview lacks the cluster:\n%s", live.Data)
	}
	for _, s := range []string{pw, url, "postgres://"} {
		if strings.Contains(home.Body, s) || strings.Contains(live.Data, s) {
			t.Errorf("the overview shows the database address or password (%.12q…)", s)
		}
	}
}

// On one host (bolt) there is no cluster to show.
func TestOverviewHasNoClusterOnASingleHost(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	home := c.get("/ui/")
	if home.Code != http.StatusOK || strings.Contains(home.Body, "Cluster") || strings.Contains(home.Body, "data-replica") {
		t.Errorf("the overview of a single host shows a cluster block (%d):\n%s", home.Code, home.Body)
	}
}

// Off loopback without server.admin_token the console refuses to serve,
// saying why, and the web channel, which only the console reaches, does
// not run at all.
func TestRefusedConsoleRunsNoWebChannel(t *testing.T) {
	r := startConsole(t, cOptions{Listen: "0.0.0.0:0", NoToken: true})
	if r.d.WebChannel() != nil {
		t.Error("the web channel was built although the console refuses to serve")
	}
	if _, ok := r.d.ChannelStates()["web"]; ok {
		t.Errorf("the web channel runs although the console refuses to serve: %v", r.d.ChannelStates())
	}
	c := newClient(t, r.base)
	got := c.get("/ui/")
	if got.Code != http.StatusServiceUnavailable || !strings.Contains(got.Body, "server.admin_token") {
		t.Errorf("/ui/ = %d %q, want 503 saying server.admin_token is needed", got.Code, got.Body)
	}
}
