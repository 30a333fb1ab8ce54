package main

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/memory/postgres"
	"github.com/switchboard-bot/switchboard/memory/storetest"
)

// fillBolt writes an installation's worth of data into a new bolt file and
// returns what the test checks afterwards.
type boltFixture struct {
	path                   string
	pendingID, answeredID  uint64
	outboxID               uint64
	noteID                 uint64
	archiveID              string
	liveHistory, archived  []string
	runIDs                 []uint64
	auditActions           []string
	pairing, offsetSetting []byte
}

func fillBolt(t *testing.T) boltFixture {
	t.Helper()
	ctx := context.Background()
	clk := storetest.NewClock()
	f := boltFixture{path: filepath.Join(t.TempDir(), "data", bolt.FileName)}
	st, err := bolt.Open(f.path, storetest.TestOptions(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.AppendTurn(ctx, "telegram:42", storetest.SimpleTurn(1)))
	must(st.AppendTurn(ctx, "telegram:42", storetest.ToolTurn(2, 2)))
	must(st.SetSessionPersona(ctx, "telegram:42", "buddy"))
	clk.Advance(time.Hour)
	must(st.ResetSession(ctx, "telegram:42"))
	archives, err := st.ArchivedSessions(ctx, "telegram:42")
	must(err)
	f.archiveID = archives[0].ID
	f.archived = []string{"u1", "a1", "u2", "", "c2-0", "c2-1", "a2"} // tool calls have no content; results are r2-x
	f.pendingID, _, err = st.Accept(ctx, memory.InboxItem{Channel: "telegram", MessageID: "900", SessionKey: "telegram:42", Payload: []byte(`{"text":"q3"}`)})
	must(err)
	f.answeredID, _, err = st.Accept(ctx, memory.InboxItem{Channel: "telegram", MessageID: "901", SessionKey: "telegram:42"})
	must(err)
	turn := storetest.SimpleTurn(3)
	turn.Sources = []uint64{f.answeredID}
	ids, err := st.CommitTurn(ctx, "telegram:42", memory.TurnCommit{Turn: &turn,
		Intents: []memory.OutboxRecord{{Target: "telegram:42", TurnID: turn.ID, Text: "a3"}},
		Audit:   []memory.AuditRecord{{Actor: "telegram:user:42", Action: "tool.current_time", Session: "telegram:42"}}})
	must(err)
	f.outboxID = ids[0]
	f.liveHistory = []string{"u3", "a3"}
	must(st.AppendTurn(ctx, "slack:C1", storetest.SimpleTurn(9)))
	note, err := st.AddNote(ctx, "telegram:user:42", "likes green tea")
	must(err)
	f.noteID = note.ID
	must(st.PutJob(ctx, memory.JobRecord{Name: "standup", Spec: []byte(`{"schedule": "0 9 * * 1-5"}`)}))
	for i := 0; i < 2; i++ {
		id, err := st.AddRun(ctx, memory.JobRun{Job: "standup", Status: "ok", Scheduled: clk.Now(),
			Deliveries: []memory.DeliveryStatus{{Target: "slack:C1", Status: "delivered", PlatformID: "1700.1"}}})
		must(err)
		f.runIDs = append(f.runIDs, id)
	}
	_, err = st.AddRun(ctx, memory.JobRun{Job: "config-only", Status: "failed", Error: "model down"})
	must(err)
	must(st.Audit(ctx, memory.AuditRecord{Actor: "cli", Action: "sessions.reset", Session: "telegram:42"}))
	f.auditActions = []string{"sessions.reset", "tool.current_time"}
	f.pairing, f.offsetSetting = []byte(`{"code":"ABC123","user":"telegram:user:7"}`), []byte("12345")
	must(st.KVPut(ctx, "pairing:ABC123", f.pairing))
	must(st.KVPut(ctx, "telegram.offset", f.offsetSetting))
	return f
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// Issue 18: `storage migrate` copies a bolt installation into PostgreSQL —
// sessions with archives and persona, notes, jobs and runs, pairing and
// cursors, audit, the pending inbox and outbox, the dedup records — prints
// equal counts, and the copy behaves as the original.
func TestStorageMigrateBoltToPostgres(t *testing.T) {
	f := fillBolt(t)
	url := pgtest.Start(t)
	code, out, errOut := runCLI(t, "storage", "migrate", "--from", "bolt:"+f.path, "--to", "postgres:"+url)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, row := range []string{"sessions ", "turns (live and archived) ", "audit records ", "kv entries"} {
		if !strings.Contains(out, row) {
			t.Errorf("count table lacks %q:\n%s", row, out)
		}
	}
	if strings.Contains(out, "DIFFERS") {
		t.Errorf("counts differ:\n%s", out)
	}
	t.Log(out)

	ctx := context.Background()
	// The fixture's clock: its dedup records are still live then.
	at := storetest.NewClock()
	at.Advance(2 * time.Hour)
	st, err := postgres.Open(ctx, url, memory.Options{Now: at.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkMigrated(t, st, f)

	// A second copy into the now non-empty database is refused...
	code, _, errOut = runCLI(t, "storage", "migrate", "--from", "bolt:"+f.path, "--to", "postgres:"+url)
	if code != 1 || !strings.Contains(errOut, "already holds data") {
		t.Errorf("second migrate: exit %d, stderr %q; want 1 and a refusal", code, errOut)
	}
	// ...unless --force, which replaces it: counts stay equal, nothing doubled.
	code, out, errOut = runCLI(t, "storage", "migrate", "--force", "--from", "bolt:"+f.path, "--to", "postgres:"+url)
	if code != 0 || strings.Contains(out, "DIFFERS") {
		t.Fatalf("migrate --force: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	checkMigrated(t, st, f)
}

func checkMigrated(t *testing.T, st *postgres.Store, f boltFixture) {
	t.Helper()
	ctx := context.Background()
	hist, err := st.LoadHistory(ctx, "telegram:42", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(hist); !reflect.DeepEqual(got, f.liveHistory) {
		t.Errorf("live history = %v, want %v", got, f.liveHistory)
	}
	meta, ok, _ := st.Session(ctx, "telegram:42")
	if !ok || meta.Persona != "buddy" || len(meta.Archived) != 1 || meta.Archived[0] != f.archiveID {
		t.Errorf("session meta = %+v", meta)
	}
	arch, err := st.LoadArchive(ctx, "telegram:42", f.archiveID)
	if err != nil {
		t.Fatal(err)
	}
	var archived []string
	for _, tr := range arch.Turns {
		for _, m := range tr.Messages {
			if m.Role != memory.RoleTool {
				archived = append(archived, m.Content)
			} else {
				archived = append(archived, m.ToolCallID)
			}
		}
	}
	if !reflect.DeepEqual(archived, f.archived) {
		t.Errorf("archived conversation = %q, want %q", archived, f.archived)
	}
	items, _ := st.InboxPending(ctx)
	if len(items) != 2 || items[0].ID != f.pendingID || string(items[0].Payload) != `{"text":"q3"}` ||
		items[1].ID != f.answeredID || items[1].State != memory.InboxAnswered || items[1].Answer != "a3" {
		t.Errorf("inbox = %+v", items)
	}
	if pending, _ := st.OutboxPending(ctx); len(pending) != 1 || pending[0].ID != f.outboxID || pending[0].Text != "a3" {
		t.Errorf("outbox pending = %+v", pending)
	}
	if dup, _ := st.Seen(ctx, "telegram", "900"); !dup {
		t.Error("the dedup record of message 900 was not copied: a redelivery would be answered twice")
	}
	// New records continue after the copied ids.
	if id, dup, err := st.Accept(ctx, memory.InboxItem{Channel: "telegram", MessageID: "902"}); err != nil || dup || id <= f.answeredID {
		t.Errorf("Accept after the copy: id %d dup %v err %v, want an id after %d", id, dup, err, f.answeredID)
	} else if err := st.InboxDone(ctx, id); err != nil {
		t.Fatal(err)
	}
	if notes, _ := st.SearchNotes(ctx, "telegram:user:42", "tea"); len(notes) != 1 || notes[0].ID != f.noteID {
		t.Errorf("notes = %+v", notes)
	}
	// bolt keeps a spec compacted (JSON-encoded RawMessage); the copy keeps it as bolt had it.
	if j, ok, _ := st.GetJob(ctx, "standup"); !ok || string(j.Spec) != `{"schedule":"0 9 * * 1-5"}` {
		t.Errorf("job = %+v (found %v)", j, ok)
	}
	runs, _ := st.ListRuns(ctx, "standup", 0)
	if len(runs) != 2 || runs[0].ID != f.runIDs[1] || runs[0].Deliveries[0].PlatformID != "1700.1" {
		t.Errorf("runs = %+v", runs)
	}
	if runs, _ := st.ListRuns(ctx, "config-only", 0); len(runs) != 1 || runs[0].Error != "model down" {
		t.Errorf("runs of a config-only job = %+v", runs)
	}
	if v, ok, _ := st.KVGet(ctx, "pairing:ABC123"); !ok || !bytes.Equal(v, f.pairing) {
		t.Errorf("pairing = %q", v)
	}
	if v, _, _ := st.KVGet(ctx, "telegram.offset"); !bytes.Equal(v, f.offsetSetting) {
		t.Errorf("telegram offset = %q", v)
	}
	var actions []string
	audit, _ := st.ListAudit(ctx, memory.AuditFilter{})
	for _, a := range audit {
		actions = append(actions, a.Action)
	}
	if !reflect.DeepEqual(actions, f.auditActions) {
		t.Errorf("audit = %v, want %v", actions, f.auditActions)
	}
}

func contents(msgs []memory.Message) []string {
	out := []string{}
	for _, m := range msgs {
		out = append(out, m.Content)
	}
	return out
}

// Mistakes in the flags are usage errors (exit 2) that never print the
// password, and a bolt file held by a running daemon is refused.
func TestStorageMigrateRefusals(t *testing.T) {
	const pw = "pw-9c1e-do-not-print"
	f := fillBolt(t)
	holder, err := bolt.Open(f.path, memory.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"from not bolt", []string{"--from", "sqlite:x.db", "--to", "postgres:postgres://u:" + pw + "@h/db"}, 2, `--from "sqlite:x.db": must be bolt:`},
		{"to not postgres", []string{"--from", "bolt:" + f.path, "--to", "mysql://u:" + pw + "@h/db"}, 2, "--to"},
		{"no bolt path", []string{"--from", "bolt:", "--to", "postgres:postgres://u:" + pw + "@h/db"}, 2, "give the file"},
		{"missing flag", []string{"--from", "bolt:" + f.path}, 2, "--to"},
		{"file held by the daemon", []string{"--from", "bolt:" + f.path, "--to", "postgres:postgres://u:" + pw + "@127.0.0.1:1/db"}, 1, "stop the daemon first"},
		{"no such file", []string{"--from", "bolt:" + f.path + ".nope", "--to", "postgres:postgres://u:" + pw + "@127.0.0.1:1/db"}, 1, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"storage", "migrate"}, c.args...)...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, c.code, c.want)
			}
			if strings.Contains(out+errOut, pw) {
				t.Errorf("output shows the password: %s%s", out, errOut)
			}
		})
	}
}
