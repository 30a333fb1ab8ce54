// Package pgtest runs a throwaway PostgreSQL server for tests: Debian's
// `postgresql` binaries (initdb, postgres) found on PATH or under
// /usr/lib/postgresql/*/bin, a fresh cluster in a temporary directory, the
// server listening on a Unix socket inside that directory only (never a TCP
// port, never the machine's own service), and a fresh database per Start.
//
// One cluster serves a whole test package when the package's TestMain calls
// Main: the first Start creates it, Main stops it and removes its directory
// after the tests. Without Main, each Start runs a private cluster that the
// test's cleanup stops. The server runs with fsync off (data is thrown away)
// and as the child of the test process with a parent-death signal, so a test
// binary killed by a timeout does not leave it running.
//
// initdb and postgres refuse to run as root; CI runs as root, so as root
// both run as the `postgres` user the Debian package creates (the cluster
// directory is chowned to it). When no binaries are found, Start skips the
// test, naming the package to install.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTimeout bounds initdb plus the server's start.
const startTimeout = 90 * time.Second

// shared is the package-wide cluster Main owns.
var shared struct {
	mu      sync.Mutex
	inMain  bool
	cluster *Cluster
	err     error
	skip    string
	started bool
}

// Main runs the package's tests (call it from TestMain) and stops the shared
// cluster afterwards, whatever the tests did.
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.cluster != nil {
		shared.cluster.Stop()
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// Start returns the URL (pgx form, Unix socket) of a new, empty database
// owned by the superuser "postgres" on the package's cluster; the test is
// skipped when no PostgreSQL binaries are installed.
func Start(t testing.TB) string {
	t.Helper()
	c := cluster(t)
	url, err := c.CreateDatabase(context.Background(), "")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return url
}

// cluster returns the shared cluster under Main, else a private one stopped
// when t ends.
func cluster(t testing.TB) *Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		bins, err := FindBinaries()
		if err != nil {
			t.Skipf("PostgreSQL binaries not found (apt-get install postgresql): %v", err)
		}
		c, err := NewCluster(bins, t.Logf)
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		t.Cleanup(c.Stop)
		return c
	}
	if !shared.started {
		shared.started = true
		bins, err := FindBinaries()
		if err != nil {
			shared.skip = err.Error()
		} else {
			shared.cluster, shared.err = NewCluster(bins, nil)
		}
	}
	switch {
	case shared.skip != "":
		t.Skipf("PostgreSQL binaries not found (apt-get install postgresql): %s", shared.skip)
	case shared.err != nil:
		t.Fatalf("pgtest: %v", shared.err)
	}
	return shared.cluster
}

// Binaries are the PostgreSQL server programs of one installation.
type Binaries struct {
	Initdb, Postgres string
}

// FindBinaries looks for initdb and postgres on PATH, then in the newest
// /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH).
func FindBinaries() (Binaries, error) {
	if i, err := exec.LookPath("initdb"); err == nil {
		if p, err := exec.LookPath("postgres"); err == nil {
			return Binaries{Initdb: i, Postgres: p}, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		b := Binaries{Initdb: filepath.Join(d, "initdb"), Postgres: filepath.Join(d, "postgres")}
		if executable(b.Initdb) && executable(b.Postgres) {
			return b, nil
		}
	}
	return Binaries{}, fmt.Errorf("no initdb and postgres on PATH or in /usr/lib/postgresql/*/bin")
}

func versionOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Cluster is one running server and its directory.
type Cluster struct {
	dir  string // temporary directory: data/ and the socket
	bins Binaries
	cred *syscall.Credential // the postgres user's when running as root
	logf func(string, ...any)

	mu     sync.Mutex
	cmd    *exec.Cmd     // the current (or last) server process
	done   chan struct{} // closed when cmd was reaped
	n      int           // databases created
	closed bool
}

// NewCluster runs initdb in a new temporary directory and starts the server
// on a Unix socket there; logf (may be nil) receives the server's log on a
// failure to start.
func NewCluster(b Binaries, logf func(string, ...any)) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	c := &Cluster{dir: dir, bins: b, logf: logf}
	cred, err := c.credential()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c.cred = cred
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.initdb(ctx, b, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// credential is nil for a normal user; as root it is the postgres user's,
// and the directory is handed to that user.
func (c *Cluster) credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb/postgres refuse root: no user \"postgres\" to run them as (%w)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(c.dir, uid, gid); err != nil {
		return nil, fmt.Errorf("chown %s to postgres: %w", c.dir, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (c *Cluster) command(ctx context.Context, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C", "HOME=" + c.dir, "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	return cmd
}

func (c *Cluster) initdb(ctx context.Context, b Binaries, cred *syscall.Credential) error {
	cmd := c.command(ctx, cred, b.Initdb, "-D", filepath.Join(c.dir, "data"), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// start runs the server in the foreground (our child, reaped by a goroutine
// that closes c.done) and waits until it accepts connections.
func (c *Cluster) start(ctx context.Context) error {
	logPath := filepath.Join(c.dir, "server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	defer logFile.Close()
	if c.cred != nil {
		_ = logFile.Chown(int(c.cred.Uid), int(c.cred.Gid))
	}
	cmd := c.command(context.Background(), c.cred, c.bins.Postgres, "-D", filepath.Join(c.dir, "data"),
		"-k", c.dir, "-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB",
		"-c", "unix_socket_permissions=0777")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The server dies with the test binary (a timeout panic skips cleanups);
	// SIGQUIT is PostgreSQL's immediate shutdown.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	c.mu.Lock()
	c.cmd, c.done = cmd, done
	c.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	url := c.url("postgres")
	for {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("postgres exited during start: %s", readTail(logPath))
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections within %s: %w\n%s", startTimeout, err, readTail(logPath))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func readTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return strings.TrimSpace(string(b))
}

// url is the connection URL of database db over the cluster's socket.
func (c *Cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&sslmode=disable", db, c.dir)
}

// Dir is the cluster's directory (also the socket directory).
func (c *Cluster) Dir() string { return c.dir }

// URL is the connection URL of database db on this cluster.
func (c *Cluster) URL(db string) string { return c.url(db) }

// CreateDatabase creates database name ("" = the next "t<n>") and returns
// its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return "", fmt.Errorf("cluster %s is stopped", c.dir)
	}
	c.n++
	if name == "" {
		name = fmt.Sprintf("t%d", c.n)
	}
	c.mu.Unlock()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", c.dir, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return c.url(name), nil
}

// Pause freezes the server and every backend (SIGSTOP to the postmaster and
// its children, which run in sessions of their own): connections stay open
// and nothing answers, as with a hung database host. Resume undoes it.
func (c *Cluster) Pause() error { return c.signalAll(syscall.SIGSTOP) }

// Resume lets a paused server run again.
func (c *Cluster) Resume() error { return c.signalAll(syscall.SIGCONT) }

// Halt shuts the server down as an operator's `pg_ctl stop` does (fast
// shutdown: every client is disconnected, the data is kept) and waits until
// it exited: nothing listens on the socket until Restart. Clients see the
// database go away, as when its host stops.
func (c *Cluster) Halt() error {
	cmd, done := c.server()
	if cmd == nil {
		return fmt.Errorf("pgtest: cluster %s is not running", c.dir)
	}
	select {
	case <-done:
		return fmt.Errorf("pgtest: cluster %s is not running", c.dir)
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("pgtest: stop the server: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(startTimeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("pgtest: the server did not stop within %s: killed", startTimeout)
	}
}

// Restart starts a halted server again on the same directory and socket:
// URLs handed out before work again. It returns once the server accepts
// connections.
func (c *Cluster) Restart() error {
	c.mu.Lock()
	closed, done := c.closed, c.done
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("pgtest: cluster %s is stopped", c.dir)
	}
	if done != nil {
		select {
		case <-done:
		default:
			return fmt.Errorf("pgtest: cluster %s is running: Halt it first", c.dir)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return c.start(ctx)
}

// server is the current server process and the channel closed when it was reaped.
func (c *Cluster) server() (*exec.Cmd, chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd, c.done
}

// signalAll sends sig to the postmaster and to every process whose parent it is.
func (c *Cluster) signalAll(sig syscall.Signal) error {
	cmd, _ := c.server()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("pgtest: cluster %s is not running", c.dir)
	}
	root := cmd.Process.Pid
	pids := []int{root}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("pgtest: list processes: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ")".
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(root) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && pid == root {
			return fmt.Errorf("pgtest: signal %v: %w", sig, err)
		}
	}
	return nil
}

// Stop shuts the server down (immediate shutdown, then SIGKILL if it does
// not exit), reaps it and removes the directory. It is idempotent.
func (c *Cluster) Stop() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	cmd, done := c.cmd, c.done
	c.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGQUIT) // harmless when Halt already stopped it
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			// The process group holds the server's children too.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if err := os.RemoveAll(c.dir); err != nil && c.logf != nil {
		c.logf("pgtest: remove %s: %v", c.dir, err)
	}
}
