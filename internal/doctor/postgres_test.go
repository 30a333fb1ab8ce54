package doctor

import (
	"os"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
)

// With storage.backend postgres, doctor checks the database server the
// config names, and never shows its password.
func TestDatabaseCheckOnPostgres(t *testing.T) {
	good := pgtest.Start(t)
	f := startFakes(t)
	cases := []struct {
		name    string
		url     string
		status  Status
		finding string
	}{
		{"reachable and consistent", good, StatusOK, "is consistent"},
		{"server refuses the role", "postgres://nobody:hunter2-secret@127.0.0.1:1/none?connect_timeout=2", StatusFail, "cannot open the PostgreSQL store"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := green(f)
			s.env["DATABASE_URL"] = tc.url
			opts := install(t, s)
			cfg, err := os.ReadFile(opts.ConfigPath)
			if err != nil {
				t.Fatal(err)
			}
			cfg = append(cfg, []byte("\nstorage:\n  backend: postgres\n  postgres:\n    url: ${DATABASE_URL}\n")...)
			if err := os.WriteFile(opts.ConfigPath, cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			results, _, report := run(t, opts)
			r := find(t, results, CheckDatabase)
			if r.Status != tc.status || !strings.Contains(r.Finding, tc.finding) {
				t.Fatalf("database check = %+v, want %v with %q", r, tc.status, tc.finding)
			}
			if strings.Contains(report, "hunter2-secret") {
				t.Fatalf("the report shows the database password:\n%s", report)
			}
		})
	}
}
