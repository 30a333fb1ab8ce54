package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openTimeout bounds Open (connect + migrate) in tests.
const openTimeout = 60 * time.Second

func openURL(t testing.TB, url string, opts memory.Options) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	s, err := Open(ctx, url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConformance runs the memory.Store conformance suite against a real
// PostgreSQL server: each storetest directory maps to its own fresh
// database, so reopening a directory reopens that database.
func TestConformance(t *testing.T) {
	var mu sync.Mutex
	dbs := map[string]string{}
	storetest.Run(t, func(tb testing.TB, dir string, opts memory.Options) (memory.Store, error) {
		mu.Lock()
		url, ok := dbs[dir]
		if !ok {
			url = pgtest.Start(tb)
			dbs[dir] = url
		}
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		return Open(ctx, url, opts)
	})
}

// Two replicas (two Stores on one database) accepting the same redelivered
// messages at once accept each exactly once, and the inbox holds one item
// per message.
func TestTwoStoresAcceptEachMessageOnce(t *testing.T) {
	url := pgtest.Start(t)
	clk := storetest.NewClock()
	a, b := openURL(t, url, storetest.TestOptions(clk)), openURL(t, url, storetest.TestOptions(clk))
	ctx := context.Background()
	const messages, deliveries = 20, 4 // each message delivered 4 times, to both replicas
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]int{}
	errs := make(chan error, messages*deliveries)
	for m := 0; m < messages; m++ {
		for d := 0; d < deliveries; d++ {
			st := []*Store{a, b}[d%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				msgID := fmt.Sprintf("m%d", m)
				_, dup, err := st.Accept(ctx, memory.InboxItem{Channel: "slack", MessageID: msgID, SessionKey: "slack:C1"})
				if err != nil {
					errs <- err
					return
				}
				if !dup {
					mu.Lock()
					accepted[msgID]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for m := 0; m < messages; m++ {
		if n := accepted[fmt.Sprintf("m%d", m)]; n != 1 {
			t.Errorf("message m%d accepted %d times, want once", m, n)
		}
	}
	items, err := b.InboxPending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != messages {
		t.Errorf("inbox holds %d items, want %d", len(items), messages)
	}
}

// Replicas starting together on an empty database migrate it once: every
// Open succeeds, and the schema is at the latest version, not dirty.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	url := pgtest.Start(t)
	const n = 5
	var wg sync.WaitGroup
	stores := make([]*Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
			defer cancel()
			stores[i], errs[i] = Open(ctx, url, memory.Options{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	var version int64
	var dirty bool
	if err := conn.QueryRow(context.Background(), `SELECT count(*), max(version), bool_or(dirty) FROM schema_migrations`).Scan(&rows, &version, &dirty); err != nil {
		t.Fatal(err)
	}
	latest, _ := SchemaVersion()
	if rows != 1 || version != int64(latest) || dirty {
		t.Errorf("schema_migrations: %d rows, version %d, dirty %v; want 1 row at %d, clean", rows, version, dirty, latest)
	}
	for i, s := range stores {
		if err := s.Check(); err != nil {
			t.Errorf("Check of store %d: %v", i, err)
		}
	}
}

// The password of the URL appears neither in Path nor in any error, also
// when the server cannot be reached at all.
func TestPasswordNeverShown(t *testing.T) {
	const pw = "S3cretPassw0rd-do-not-print"
	good := pgtest.Start(t)
	withPW := strings.Replace(good, "postgres://postgres@", "postgres://postgres:"+pw+"@", 1)
	s := openURL(t, withPW, memory.Options{})
	if strings.Contains(s.Path(), pw) || !strings.Contains(s.Path(), "[redacted]") {
		t.Errorf("Path() = %q, want the URL with the password redacted", s.Path())
	}
	cases := []struct{ name, url string }{
		{"no server", "postgres://sb:" + pw + "@127.0.0.1:1/switchboard?sslmode=disable&connect_timeout=2"},
		{"bad url", "postgres://sb:" + pw + "@127.0.0.1:notaport/x"},
		{"dsn", "host=127.0.0.1 port=1 user=sb password=" + pw + " dbname=x connect_timeout=2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := Open(ctx, c.url, memory.Options{})
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded")
			}
			if strings.Contains(err.Error(), pw) {
				t.Errorf("error shows the password: %v", err)
			}
			t.Log(err)
		})
	}
}

// Check finds a session whose counters disagree with its turns, and a
// database whose schema is ahead of this binary is refused at Open.
func TestCheckAndNewerSchema(t *testing.T) {
	url := pgtest.Start(t)
	s := openURL(t, url, storetest.TestOptions(storetest.NewClock()))
	ctx := context.Background()
	if err := s.AppendTurn(ctx, "telegram:1", storetest.SimpleTurn(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("Check on a healthy database: %v", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE sessions SET messages = 7 WHERE key = 'telegram:1'`); err != nil {
		t.Fatal(err)
	}
	err = s.Check()
	if !errors.Is(err, memory.ErrInvalidDatabase) || !strings.Contains(err.Error(), "telegram:1") {
		t.Errorf("Check of a damaged session: %v, want ErrInvalidDatabase naming telegram:1", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE schema_migrations SET version = 999`); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "schema version 999") {
		t.Errorf("Check with a foreign schema version: %v", err)
	}
	ctx2, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if s2, err := Open(ctx2, url, memory.Options{}); err == nil {
		_ = s2.Close()
		t.Error("Open of a database from a newer switchboard succeeded")
	} else if !strings.Contains(err.Error(), "newer switchboard") {
		t.Errorf("Open of a newer schema: %v", err)
	}
}

// Text that PostgreSQL cannot hold in a text column (NUL, invalid UTF-8) is
// stored with U+FFFD instead of failing the write; messages keep it exactly.
func TestUnstorableTextIsReplaced(t *testing.T) {
	s := openURL(t, pgtest.Start(t), storetest.TestOptions(storetest.NewClock()))
	ctx := context.Background()
	odd := "a\x00b\xffc"
	turn := memory.Turn{ID: "t1", Answer: odd, Messages: []memory.Message{
		{Role: memory.RoleUser, Content: "q"}, {Role: memory.RoleTool, ToolCallID: "x", Content: "bin\x00ary"}}}
	if err := s.AppendTurn(ctx, "a:1", turn); err != nil {
		t.Fatalf("AppendTurn with a NUL byte: %v", err)
	}
	turns, err := s.SessionTurns(ctx, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	if got := turns[0].Answer; got != "a\uFFFDb\uFFFDc" {
		t.Errorf("answer = %q", got)
	}
	if got := turns[0].Messages[1].Content; got != "bin\x00ary" {
		t.Errorf("tool result = %q, want the NUL kept", got)
	}
	if _, err := s.AddNote(ctx, "a:1", odd); err != nil {
		t.Errorf("AddNote with a NUL byte: %v", err)
	}
}

// The hub's claims mode reads one session's backlog, oldest first.
func TestInboxPendingSession(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, pgtest.Start(t), storetest.TestOptions(storetest.NewClock()))
	var want []uint64
	for i, key := range []string{"slack:C1", "slack:C2", "slack:C1", "slack:C1"} {
		id, _, err := s.Accept(ctx, memory.InboxItem{Channel: "slack", MessageID: fmt.Sprint("m", i), SessionKey: key})
		if err != nil {
			t.Fatal(err)
		}
		if key == "slack:C1" {
			want = append(want, id)
		}
	}
	if err := s.InboxDone(ctx, want[1]); err != nil {
		t.Fatal(err)
	}
	got, err := s.InboxPendingSession(ctx, "slack:C1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != want[0] || got[1].ID != want[2] || got[0].SessionKey != "slack:C1" {
		t.Fatalf("InboxPendingSession = %+v, want items %d and %d of slack:C1", got, want[0], want[2])
	}
}

// A password with an unencoded '@' (pgx then reads its second half as part
// of the host name, "lookup SECRET9@127.0.0.1: no such host") shows in no
// piece in Open's error; no server is needed.
func TestPasswordWithAtNeverShown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, url := range []string{
		"postgres://sb:PG@SECRET9@127.0.0.1:1/db?connect_timeout=2",
		"postgres://sb:pa/SECRET9@127.0.0.1:1/db?connect_timeout=2",
	} {
		s, err := Open(ctx, url, memory.Options{})
		if err == nil {
			_ = s.Close()
			t.Fatalf("Open(%s) succeeded", url)
		}
		if strings.Contains(err.Error(), "SECRET9") {
			t.Errorf("a piece of the password is in the error: %v", err)
		}
		t.Log(err)
	}
}
