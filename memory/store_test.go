package memory

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// fakeClock is an injected clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testOpts are fast options: no fsync, short batch delay, injected clock.
func testOpts(clk *fakeClock) Options {
	return Options{Now: clk.Now, NoSync: true, BatchDelay: time.Millisecond, Timeout: 200 * time.Millisecond}
}

func openAt(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openTest(t testing.TB) (*Store, *fakeClock, string) {
	t.Helper()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "data", FileName)
	return openAt(t, path, testOpts(clk)), clk, path
}

func TestOpenCreatesPrivateDirAndFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	path := filepath.Join(dir, FileName)
	s := openAt(t, path, testOpts(newClock()))
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir, 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s mode = %o, want %o", c.path, got, c.want)
		}
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	ctx := context.Background()
	s, clk, path := openTest(t)

	turn := Turn{ID: "t1", Messages: []Message{
		{Role: RoleUser, Content: "hello", Name: "ann", Time: clk.Now()},
		{Role: RoleAssistant, Content: "hi ann", Time: clk.Now()},
	}, Usage: Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}, FinishReason: "final", Answer: "hi ann"}
	mustNo(t, s.AppendTurn(ctx, "telegram:1", turn))
	mustNo(t, s.SetSessionPersona(ctx, "telegram:1", "buddy"))
	note, err := s.AddNote(ctx, "telegram:user:42", "likes tea")
	mustNo(t, err)
	inID, dup, err := s.Accept(ctx, InboxItem{Channel: "telegram", MessageID: "m1", SessionKey: "telegram:1", Payload: []byte(`{"text":"hello"}`)})
	mustNo(t, err)
	if dup {
		t.Fatal("first Accept reported duplicate")
	}
	obID, err := s.OutboxIntent(ctx, OutboxRecord{Target: "telegram:1", TurnID: "t1", Chunk: 0, Text: "hi ann"})
	mustNo(t, err)
	mustNo(t, s.OutboxResult(ctx, obID, OutboxDelivered, "555", ""))
	mustNo(t, s.PutJob(ctx, JobRecord{Name: "daily", Spec: []byte(`{"schedule":"0 9 * * *"}`)}))
	runID, err := s.AddRun(ctx, JobRun{Job: "daily", Status: "ok", Deliveries: []DeliveryStatus{{Target: "telegram:1", Status: "delivered", PlatformID: "9"}}})
	mustNo(t, err)
	mustNo(t, s.Audit(ctx, AuditRecord{Actor: "telegram:user:42", Action: "reset", Session: "telegram:1"}))
	mustNo(t, s.KVPut(ctx, "telegram.offset", []byte("12345")))

	mustNo(t, s.Close())
	mustNo(t, s.Close()) // idempotent
	if _, err := s.LoadHistory(ctx, "telegram:1", 0); !errors.Is(err, ErrClosed) {
		t.Errorf("LoadHistory after Close: err = %v, want ErrClosed", err)
	}

	s = openAt(t, path, testOpts(clk))
	hist, err := s.LoadHistory(ctx, "telegram:1", 0)
	mustNo(t, err)
	if len(hist) != 2 || hist[0].Content != "hello" || hist[1].Content != "hi ann" || hist[0].Name != "ann" {
		t.Errorf("history after reopen = %+v", hist)
	}
	meta, ok, err := s.Session(ctx, "telegram:1")
	mustNo(t, err)
	if !ok || meta.Persona != "buddy" || meta.Turns != 1 || meta.Messages != 2 || meta.Usage.TotalTokens != 13 || meta.LastTurnID != "t1" {
		t.Errorf("session meta after reopen = %+v (found %v)", meta, ok)
	}
	notes, err := s.ListNotes(ctx, "telegram:user:42")
	mustNo(t, err)
	if len(notes) != 1 || notes[0] != note {
		t.Errorf("notes after reopen = %+v, want [%+v]", notes, note)
	}
	if _, dup, err := s.Accept(ctx, InboxItem{Channel: "telegram", MessageID: "m1"}); err != nil || !dup {
		t.Errorf("Accept of m1 after reopen: dup=%v err=%v, want duplicate", dup, err)
	}
	items, err := s.InboxPending(ctx)
	mustNo(t, err)
	if len(items) != 1 || items[0].ID != inID || string(items[0].Payload) != `{"text":"hello"}` || items[0].State != InboxPending {
		t.Errorf("inbox after reopen = %+v", items)
	}
	ob, err := s.OutboxForTurn(ctx, "t1")
	mustNo(t, err)
	if len(ob) != 1 || ob[0].Status != OutboxDelivered || ob[0].PlatformID != "555" {
		t.Errorf("outbox after reopen = %+v", ob)
	}
	job, ok, err := s.GetJob(ctx, "daily")
	mustNo(t, err)
	if !ok || string(job.Spec) != `{"schedule":"0 9 * * *"}` {
		t.Errorf("job after reopen = %+v found=%v", job, ok)
	}
	runs, err := s.ListRuns(ctx, "daily", 0)
	mustNo(t, err)
	if len(runs) != 1 || runs[0].ID != runID || runs[0].Deliveries[0].PlatformID != "9" {
		t.Errorf("runs after reopen = %+v", runs)
	}
	audit, err := s.ListAudit(ctx, AuditFilter{})
	mustNo(t, err)
	if len(audit) != 1 || audit[0].Action != "reset" || !audit[0].Time.Equal(clk.Now()) {
		t.Errorf("audit after reopen = %+v", audit)
	}
	v, ok, err := s.KVGet(ctx, "telegram.offset")
	mustNo(t, err)
	if !ok || string(v) != "12345" {
		t.Errorf("kv after reopen = %q found=%v", v, ok)
	}
}

func TestOpenRejectsInvalidFiles(t *testing.T) {
	// A valid switchboard file whose two meta pages were overwritten.
	brokenMeta := func(t *testing.T, path string) {
		s := openAt(t, path, testOpts(newClock()))
		mustNo(t, s.AppendTurn(context.Background(), "a:1", Turn{ID: "x", Messages: []Message{{Role: RoleUser, Content: "x"}}}))
		mustNo(t, s.Close())
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		mustNo(t, err)
		defer f.Close()
		_, err = f.WriteAt(bytes.Repeat([]byte{0xAB}, 2*os.Getpagesize()), 0)
		mustNo(t, err)
	}
	foreignBolt := func(t *testing.T, path string) {
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
		mustNo(t, err)
		mustNo(t, db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("widgets"))
			return err
		}))
		mustNo(t, db.Close())
	}
	writeFile := func(data []byte) func(*testing.T, string) {
		return func(t *testing.T, path string) { mustNo(t, os.WriteFile(path, data, 0o600)) }
	}
	cases := []struct {
		name   string
		setup  func(*testing.T, string)
		detail string // extra text the error must contain
	}{
		{"text file", writeFile([]byte("this is a config file, not a database\n")), ""},
		{"random bytes", writeFile(bytes.Repeat([]byte("\x13\x37garbage"), 4096)), ""},
		{"broken meta pages", brokenMeta, ""},
		{"another program's bolt file", foreignBolt, "widgets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			c.setup(t, path)
			s, err := Open(path, testOpts(newClock()))
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded on an invalid file")
			}
			if !errors.Is(err, ErrInvalidDatabase) {
				t.Errorf("err = %v, want ErrInvalidDatabase", err)
			}
			t.Log(err)
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, "is not a valid switchboard database") || !strings.Contains(msg, c.detail) {
				t.Errorf("error text %q should name the file, say it is not a valid switchboard database and mention %q", msg, c.detail)
			}
		})
	}
}

func TestOpenLockedInSameProcess(t *testing.T) {
	s, clk, path := openTest(t)
	opts := testOpts(clk)
	opts.Timeout = 50 * time.Millisecond
	s2, err := Open(path, opts)
	if err == nil {
		_ = s2.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "is in use by another switchboard process") || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want a clear in-use error naming the file", err)
	}
	mustNo(t, s.Close())
	s3 := openAt(t, path, opts) // lock released by Close
	mustNo(t, s3.Close())
}

func TestStatsAndCheck(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t)
	mustNo(t, s.AppendTurn(ctx, "a:1", Turn{ID: "t1", Messages: []Message{{Role: RoleUser, Content: "q"}, {Role: RoleAssistant, Content: "a"}}}))
	mustNo(t, s.AppendTurn(ctx, "a:2", Turn{ID: "t2", Messages: []Message{{Role: RoleUser, Content: "q"}}}))
	mustNo(t, s.ResetSession(ctx, "a:2"))
	_, err := s.AddNote(ctx, "a:1", "n")
	mustNo(t, err)
	id1, _, err := s.Accept(ctx, InboxItem{Channel: "a", MessageID: "1"})
	mustNo(t, err)
	_, _, err = s.Accept(ctx, InboxItem{Channel: "a", MessageID: "2"})
	mustNo(t, err)
	mustNo(t, s.AppendTurn(ctx, "a:1", Turn{ID: "t3", Sources: []uint64{id1}, Answer: "x", Messages: []Message{{Role: RoleUser, Content: "q"}}}))
	_, err = s.OutboxIntent(ctx, OutboxRecord{Target: "a:1", TurnID: "t3", Text: "x"})
	mustNo(t, err)
	mustNo(t, s.KVPut(ctx, "k", []byte("v")))

	st, err := s.Stats(ctx)
	mustNo(t, err)
	want := Stats{Path: s.Path(), FileSize: st.FileSize, Sessions: 2, Messages: 3, Archives: 1, Notes: 1, DedupRecords: 2,
		InboxPending: 1, InboxAnswered: 1, OutboxPending: 1, OutboxTotal: 1, KV: 1}
	if st != want {
		t.Errorf("Stats = %+v\nwant    %+v", st, want)
	}
	if st.FileSize <= 0 {
		t.Errorf("FileSize = %d", st.FileSize)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check on a healthy file: %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	s, _, _ := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Accept(ctx, InboxItem{Channel: "a", MessageID: "1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Accept with canceled ctx: %v", err)
	}
	items, err := s.InboxPending(context.Background())
	mustNo(t, err)
	if len(items) != 0 {
		t.Errorf("canceled Accept wrote %d items", len(items))
	}
}

func TestKV(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t)
	if _, ok, err := s.KVGet(ctx, "missing"); err != nil || ok {
		t.Errorf("KVGet missing: ok=%v err=%v", ok, err)
	}
	val := []byte("abc")
	mustNo(t, s.KVPut(ctx, "pair:ABC123", val))
	val[0] = 'X' // the store must have copied it
	got, ok, err := s.KVGet(ctx, "pair:ABC123")
	mustNo(t, err)
	if !ok || string(got) != "abc" {
		t.Errorf("KVGet = %q %v", got, ok)
	}
	mustNo(t, s.KVPut(ctx, "pair:ABC123", []byte("def")))
	got, _, _ = s.KVGet(ctx, "pair:ABC123")
	if string(got) != "def" {
		t.Errorf("KVPut did not replace: %q", got)
	}
	mustNo(t, s.KVDelete(ctx, "pair:ABC123"))
	mustNo(t, s.KVDelete(ctx, "pair:ABC123"))
	if _, ok, _ := s.KVGet(ctx, "pair:ABC123"); ok {
		t.Error("key still present after KVDelete")
	}
	if err := s.KVPut(ctx, "", nil); err == nil {
		t.Error("KVPut with empty key succeeded")
	}
	mustNo(t, s.Close())
	if err := s.KVPut(ctx, "pair:SECRET9", []byte("v")); err == nil || strings.Contains(err.Error(), "SECRET9") {
		t.Errorf("KVPut on closed store: err = %v (must fail without echoing the key)", err)
	}
}

func mustNo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
