package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// Each Start is its own empty database on the shared cluster, reachable
// over the socket, and writes in one are invisible in another.
func TestStartGivesFreshDatabases(t *testing.T) {
	ctx := context.Background()
	urls := []string{Start(t), Start(t)}
	if urls[0] == urls[1] {
		t.Fatalf("two Starts returned the same database %s", urls[0])
	}
	for i, url := range urls {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connect %s: %v", url, err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("database %d has %d tables, want a fresh one", i, n)
		}
		if i == 0 {
			if _, err := conn.Exec(ctx, "CREATE TABLE only_in_first (x int)"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A private cluster (no Main) is stopped and its directory removed when
// Stop runs; the server process is reaped.
func TestClusterStopRemovesEverything(t *testing.T) {
	bins, err := FindBinaries()
	if err != nil {
		t.Skipf("PostgreSQL binaries not found (apt-get install postgresql): %v", err)
	}
	c, err := NewCluster(bins, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	url, err := c.CreateDatabase(context.Background(), "private")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(context.Background())
	pid := c.cmd.Process.Pid
	c.Stop()
	c.Stop() // idempotent
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("cluster directory still there after Stop: %v", err)
	}
	if c.cmd.ProcessState == nil || !c.cmd.ProcessState.Exited() && c.cmd.ProcessState.Sys() == nil {
		t.Errorf("server process %d not reaped", pid)
	}
	if _, err := c.CreateDatabase(context.Background(), ""); err == nil {
		t.Error("CreateDatabase on a stopped cluster succeeded")
	}
}
