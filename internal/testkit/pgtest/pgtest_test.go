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

// Halt stops the server with its data kept: connecting fails until Restart,
// after which the same URL reaches the same data. Stop after a Halt, or
// after a Restart, still reaps the server and removes the directory.
func TestClusterHaltAndRestart(t *testing.T) {
	bins, err := FindBinaries()
	if err != nil {
		t.Skipf("PostgreSQL binaries not found (apt-get install postgresql): %v", err)
	}
	c, err := NewCluster(bins, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := context.Background()
	url, err := c.CreateDatabase(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE survives (x int); INSERT INTO survives VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Halt(); err != nil {
		t.Fatalf("Halt: %v", err)
	}
	if err := c.Halt(); err == nil {
		t.Error("a second Halt succeeded on a halted server")
	}
	if err := exec("SELECT 1"); err == nil {
		t.Fatal("a query succeeded while the server was halted")
	}
	if err := c.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if err := c.Restart(); err == nil {
		t.Error("Restart of a running server succeeded")
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect after Restart: %v", err)
	}
	defer conn.Close(ctx)
	var x int
	if err := conn.QueryRow(ctx, "SELECT x FROM survives").Scan(&x); err != nil || x != 42 {
		t.Fatalf("row after Restart = %d, %v; want 42", x, err)
	}
}
