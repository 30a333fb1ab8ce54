package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

func (h harness) testNotesAreIsolatedPerScope(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := h.openTest(t)
	alice, bob := "telegram:user:42", "telegram:user:43"
	n1, err := s.AddNote(ctx, alice, "Prefers Earl Grey tea, no sugar")
	mustNo(t, err)
	clk.Advance(time.Second)
	n2, err := s.AddNote(ctx, alice, "Birthday: 4 May")
	mustNo(t, err)
	b1, err := s.AddNote(ctx, bob, "Drinks green TEA")
	mustNo(t, err)
	// A scope that is a prefix of another sees only its own notes.
	_, err = s.AddNote(ctx, "telegram:user:4", "prefix scope")
	mustNo(t, err)

	list, err := s.ListNotes(ctx, alice)
	mustNo(t, err)
	if !reflect.DeepEqual(list, []memory.Note{n1, n2}) {
		t.Errorf("ListNotes(alice) = %+v", list)
	}
	if n1.Scope != alice || n1.Created != clk.Now().Add(-time.Second) || n1.ID == n2.ID {
		t.Errorf("notes = %+v %+v", n1, n2)
	}
	cases := []struct {
		scope, query string
		want         []memory.Note
	}{
		{alice, "tea", []memory.Note{n1}},
		{alice, "EARL tea", []memory.Note{n1}},       // every word, any case
		{alice, "sugar grey", []memory.Note{n1}},     // any order
		{alice, "tea birthday", []memory.Note{}},     // one word missing
		{alice, "", []memory.Note{n1, n2}},           // empty query: all
		{alice, "green", []memory.Note{}},            // bob's note is invisible
		{bob, "tea", []memory.Note{b1}},              // bob sees only his own
		{"telegram:user:99", "tea", []memory.Note{}}, // unknown scope
	}
	for _, c := range cases {
		got, err := s.SearchNotes(ctx, c.scope, c.query)
		mustNo(t, err)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("SearchNotes(%s, %q) = %+v, want %+v", c.scope, c.query, got, c.want)
		}
	}
	// Deleting through the wrong scope fails and leaves the note.
	if err := s.DeleteNote(ctx, bob, n1.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("DeleteNote across scopes: %v, want memory.ErrNotFound", err)
	}
	mustNo(t, s.DeleteNote(ctx, alice, n1.ID))
	list, _ = s.ListNotes(ctx, alice)
	if !reflect.DeepEqual(list, []memory.Note{n2}) {
		t.Errorf("after delete: %+v", list)
	}
	if _, err := s.AddNote(ctx, alice, "   "); err == nil {
		t.Error("AddNote accepted blank text")
	}
}

func (h harness) testAuditFilter(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := h.openTest(t)
	start := clk.Now()
	for i := 0; i < 6; i++ {
		sess := "telegram:1"
		if i%2 == 1 {
			sess = "slack:C1"
		}
		mustNo(t, s.Audit(ctx, memory.AuditRecord{Actor: "agent", Action: fmt.Sprintf("turn-%d", i), Session: sess}))
		clk.Advance(time.Minute)
	}
	mustNo(t, s.Audit(ctx, memory.AuditRecord{Time: start.Add(-time.Hour), Actor: "cli", Action: "explicit-time", Error: "boom"}))

	actions := func(recs []memory.AuditRecord) []string {
		out := []string{}
		for _, r := range recs {
			out = append(out, r.Action)
		}
		return out
	}
	cases := []struct {
		name string
		f    memory.AuditFilter
		want []string
	}{
		{"all, newest first", memory.AuditFilter{}, []string{"explicit-time", "turn-5", "turn-4", "turn-3", "turn-2", "turn-1", "turn-0"}},
		{"session", memory.AuditFilter{Session: "slack:C1"}, []string{"turn-5", "turn-3", "turn-1"}},
		{"since", memory.AuditFilter{Since: start.Add(3 * time.Minute)}, []string{"turn-5", "turn-4", "turn-3"}},
		{"session+since", memory.AuditFilter{Session: "telegram:1", Since: start.Add(time.Minute)}, []string{"turn-4", "turn-2"}},
		{"limit", memory.AuditFilter{Limit: 2}, []string{"explicit-time", "turn-5"}},
		{"session+limit", memory.AuditFilter{Session: "telegram:1", Limit: 2}, []string{"turn-4", "turn-2"}},
		{"unknown session", memory.AuditFilter{Session: "discord:1"}, []string{}},
	}
	for _, c := range cases {
		got, err := s.ListAudit(ctx, c.f)
		mustNo(t, err)
		if !reflect.DeepEqual(actions(got), c.want) {
			t.Errorf("%s: ListAudit = %v, want %v", c.name, actions(got), c.want)
		}
	}
	all, _ := s.ListAudit(ctx, memory.AuditFilter{Limit: 1})
	if all[0].Error != "boom" || all[0].Actor != "cli" || !all[0].Time.Equal(start.Add(-time.Hour)) || all[0].ID != 7 {
		t.Errorf("record = %+v", all[0])
	}
}

func (h harness) testJobsAndRuns(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := h.openTest(t)
	created := clk.Now()
	mustNo(t, s.PutJob(ctx, memory.JobRecord{Name: "standup", Spec: []byte(`{"schedule":"0 9 * * 1-5"}`)}))
	mustNo(t, s.PutJob(ctx, memory.JobRecord{Name: "backup", Spec: []byte(`{"schedule":"@daily"}`)}))
	clk.Advance(time.Hour)
	mustNo(t, s.PutJob(ctx, memory.JobRecord{Name: "standup", Spec: []byte(`{"schedule":"30 9 * * 1-5"}`)}))
	j, ok, err := s.GetJob(ctx, "standup")
	mustNo(t, err)
	if !ok || string(j.Spec) != `{"schedule":"30 9 * * 1-5"}` || !j.Created.Equal(created) || !j.Updated.Equal(clk.Now()) {
		t.Errorf("GetJob = %+v", j)
	}
	jobs, err := s.ListJobs(ctx)
	mustNo(t, err)
	if len(jobs) != 2 || jobs[0].Name != "backup" || jobs[1].Name != "standup" {
		t.Errorf("ListJobs = %+v", jobs)
	}
	if err := s.PutJob(ctx, memory.JobRecord{Name: "bad", Spec: []byte(`{not json`)}); err == nil {
		t.Error("PutJob accepted invalid JSON")
	}

	var ids []uint64
	for i := 0; i < 3; i++ {
		id, err := s.AddRun(ctx, memory.JobRun{Job: "standup", Scheduled: clk.Now(), Status: "running"})
		mustNo(t, err)
		ids = append(ids, id)
	}
	backupRun, err := s.AddRun(ctx, memory.JobRun{Job: "backup", Status: "ok"})
	mustNo(t, err)
	if backupRun == ids[2] || backupRun <= ids[2] {
		t.Errorf("run ids must be unique across jobs: %v and %d", ids, backupRun)
	}
	done := memory.JobRun{ID: ids[1], Job: "standup", Status: "ok", Finished: clk.Now(),
		Deliveries: []memory.DeliveryStatus{{Target: "slack:C1", Status: "delivered", PlatformID: "1700.1"}, {Target: "telegram:9", Status: "failed", Error: "chat not found"}}}
	mustNo(t, s.UpdateRun(ctx, done))
	runs, err := s.ListRuns(ctx, "standup", 0)
	mustNo(t, err)
	if len(runs) != 3 || runs[0].ID != ids[2] || runs[2].ID != ids[0] {
		t.Fatalf("ListRuns = %+v, want newest first", runs)
	}
	if !reflect.DeepEqual(runs[1], done) {
		t.Errorf("updated run = %+v, want %+v", runs[1], done)
	}
	if runs, _ := s.ListRuns(ctx, "standup", 2); len(runs) != 2 || runs[0].ID != ids[2] {
		t.Errorf("ListRuns limit 2 = %+v", runs)
	}
	if err := s.UpdateRun(ctx, memory.JobRun{ID: 999, Job: "standup"}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("UpdateRun unknown: %v", err)
	}
	mustNo(t, s.DeleteJob(ctx, "standup"))
	if _, ok, _ := s.GetJob(ctx, "standup"); ok {
		t.Error("job still there after DeleteJob")
	}
	if runs, _ := s.ListRuns(ctx, "standup", 0); len(runs) != 0 {
		t.Errorf("runs of a deleted job = %+v", runs)
	}
	if err := s.DeleteJob(ctx, "standup"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("DeleteJob twice: %v", err)
	}
}

func (h harness) testPrune(t *testing.T) {
	ctx := context.Background()
	clk := NewClock()
	opts := TestOptions(clk)
	opts.AuditMaxAge = 48 * time.Hour
	opts.AuditMaxRecords = 5
	opts.RunsPerJob = 2
	opts.OutboxMaxAge = 24 * time.Hour
	opts.DedupTTL = 24 * time.Hour
	s := h.openAt(t, t.TempDir(), opts)
	start := clk.Now()

	// Audit: 3 records 3 days old, then 7 recent ones; 5 newest survive.
	for i := 0; i < 10; i++ {
		at := start.Add(time.Duration(i) * time.Minute)
		if i < 3 {
			at = start.Add(-72 * time.Hour)
		}
		mustNo(t, s.Audit(ctx, memory.AuditRecord{Time: at, Action: fmt.Sprintf("a%d", i)}))
	}
	// Runs: 4 for one job, 1 for another.
	for i := 0; i < 4; i++ {
		_, err := s.AddRun(ctx, memory.JobRun{Job: "j1", Status: fmt.Sprintf("r%d", i)})
		mustNo(t, err)
	}
	_, err := s.AddRun(ctx, memory.JobRun{Job: "j2", Status: "only"})
	mustNo(t, err)
	// Outbox: one old record, then one new.
	_, err = s.OutboxIntent(ctx, memory.OutboxRecord{Target: "a:1", TurnID: "old", Text: "x"})
	mustNo(t, err)
	_, _, err = s.Accept(ctx, memory.InboxItem{Channel: "a", MessageID: "old"})
	mustNo(t, err)
	clk.Advance(25 * time.Hour)
	_, err = s.OutboxIntent(ctx, memory.OutboxRecord{Target: "a:1", TurnID: "new", Text: "y"})
	mustNo(t, err)
	_, _, err = s.Accept(ctx, memory.InboxItem{Channel: "a", MessageID: "new"})
	mustNo(t, err)

	res, err := s.PruneCounts(ctx)
	mustNo(t, err)
	if want := (memory.PruneResult{Dedup: 1, Audit: 5, Runs: 2, Outbox: 1}); res != want {
		t.Errorf("PruneCounts = %+v, want %+v", res, want)
	}
	audit, _ := s.ListAudit(ctx, memory.AuditFilter{})
	var got []string
	for _, r := range audit {
		got = append(got, r.Action)
	}
	if want := []string{"a9", "a8", "a7", "a6", "a5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("audit after prune = %v, want %v", got, want)
	}
	runs, _ := s.ListRuns(ctx, "j1", 0)
	if len(runs) != 2 || runs[0].Status != "r3" || runs[1].Status != "r2" {
		t.Errorf("j1 runs after prune = %+v", runs)
	}
	if runs, _ := s.ListRuns(ctx, "j2", 0); len(runs) != 1 {
		t.Errorf("j2 runs after prune = %+v", runs)
	}
	if recs, _ := s.OutboxForTurn(ctx, "old"); len(recs) != 0 {
		t.Errorf("old outbox record survived: %+v", recs)
	}
	if recs, _ := s.OutboxForTurn(ctx, "new"); len(recs) != 1 {
		t.Errorf("new outbox record pruned: %+v", recs)
	}
	if _, dup, _ := s.Accept(ctx, memory.InboxItem{Channel: "a", MessageID: "new"}); !dup {
		t.Error("fresh dedup record was pruned")
	}
	// A second prune has nothing left to do; inbox items are never pruned.
	res, err = s.PruneCounts(ctx)
	mustNo(t, err)
	if res != (memory.PruneResult{}) {
		t.Errorf("second prune = %+v", res)
	}
	if items, _ := s.InboxPending(ctx); len(items) != 2 {
		t.Errorf("prune touched the inbox: %+v", items)
	}
	mustNo(t, s.Prune(ctx))
}
