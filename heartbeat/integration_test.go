package heartbeat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

func realAgent(t *testing.T, srv *fakellm.Server, store memory.Store, clk *clock, tools ...agent.Tool) *agent.Agent {
	t.Helper()
	reg := agent.NewRegistry()
	for _, tl := range tools {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	a, err := agent.New(agent.Options{BaseURL: srv.URL, APIKey: "sk-test", HTTPClient: srv.HTTPClient(), Sessions: store,
		MaxRetries: -1, Timeout: 5 * time.Second, Now: clk.Now, Location: time.UTC, Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// With the real agent against the fake LLM: a tick without eligible targets
// sends no request at all; an eligible one sends exactly one, without tools,
// and the greeting lands in the chat while the instruction does not.
func TestHeartbeatWithRealAgent(t *testing.T) {
	day := time.Date(2025, 2, 3, 0, 0, 0, 0, time.UTC)
	r := newRig(t, day)
	srv := fakellm.Start(t, fakellm.Text(`{"action":"greet","message":"Hi Sam, how did the move go?"}`))
	out := newFakeOut(r.clk)
	const key = "telegram:77"
	r.userSaid(key, "Sam", "moving house tomorrow", day.Add(8*time.Hour))
	h, err := NewHeartbeat(Options{Store: r.store, Heartbeat: hbConfig("09:00-21:00", 1, 6*time.Hour), Location: time.UTC,
		Agent: realAgent(t, srv, r.store, r.clk), Out: out, Now: r.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	slot := h.Plan(key, day.Add(12*time.Hour)).Slots[0]
	ctx := context.Background()
	for _, now := range []time.Time{day.Add(5 * time.Hour), slot.Add(-time.Second), day.Add(8*time.Hour + 30*time.Minute)} {
		if _, err := h.Tick(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.RequestCount(); n != 0 {
		t.Fatalf("%d model requests on ticks without an eligible target", n)
	}
	greetAt := slot
	if min := day.Add(14 * time.Hour); greetAt.Before(min) {
		greetAt = min // idle_after 6h after the 08:00 message
	}
	r.clk.Set(greetAt)
	ds, err := h.Tick(ctx, greetAt)
	if err != nil {
		t.Fatal(err)
	}
	if d := decisionFor(ds, key); d.Action != ActionGreeted {
		t.Fatalf("decision %+v", d)
	}
	if n := srv.RequestCount(); n != 1 {
		t.Fatalf("%d model requests, want 1", n)
	}
	req := srv.LastRequest()
	if req.HasTools() || !strings.Contains(req.LastUserText(), "moving house tomorrow") || !strings.Contains(req.LastUserText(), "Sam") {
		t.Errorf("request tools %v, instruction %q", req.ToolNames(), req.LastUserText())
	}
	if s := out.Sent(); len(s) != 1 || s[0].Text != "Hi Sam, how did the move go?" {
		t.Fatalf("deliveries %+v", s)
	}
	hist, _ := r.store.LoadHistory(ctx, key, 0)
	for _, m := range hist {
		if strings.Contains(m.Content, "[heartbeat]") || strings.Contains(m.Content, `"action"`) {
			t.Errorf("chat session holds the instruction or raw JSON: %+v", m)
		}
	}
	if last := hist[len(hist)-1]; last.Role != memory.RoleAssistant || last.Content != "Hi Sam, how did the move go?" {
		t.Errorf("last message %+v", last)
	}
}

// The schedule tool called by the model in a real agent turn stores a
// reminder that the scheduler delivers when simulated time passes it.
func TestScheduleToolThroughRealAgent(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newRig(t, now)
	out := newFakeOut(r.clk)
	srv := fakellm.Start(t, fakellm.Queue(
		fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "schedule", Arguments: `{"action":"create","kind":"reminder","text":"Call mum","in":"2m"}`}}},
		fakellm.Response{Content: "Done, I'll remind you in 2 minutes."},
	))
	j, err := NewJobs(Options{Store: r.store, Location: time.UTC, Out: out, Now: r.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	a := realAgent(t, srv, r.store, r.clk, NewScheduleTool(j))
	res, err := a.ProcessMessage(context.Background(), agent.Request{SessionKey: "telegram:9", Text: "remind me to call mum in 2 minutes"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "remind you") {
		t.Fatalf("answer %q", res.Text)
	}
	tr := srv.Requests()[1].ToolResults()
	if len(tr) != 1 || !strings.Contains(fakellm.MessageText(tr[0]), "Scheduled reminder") {
		t.Fatalf("tool result %+v", tr)
	}
	for m := 0; m <= 4; m++ {
		at := now.Add(time.Duration(m) * time.Minute)
		r.clk.Set(at)
		if err := j.Tick(context.Background(), at); err != nil {
			t.Fatal(err)
		}
	}
	if s := out.Sent(); len(s) != 1 || s[0].Text != "Call mum" || s[0].Target != "telegram:9" {
		t.Fatalf("deliveries %+v", s)
	}
}

// Start runs the startup misfire pass (run_once after two days down) in the
// background through the real cron scheduler, keeps cron entries in sync with
// created and deleted jobs, and Stop is idempotent.
func TestSchedulerStartStop(t *testing.T) {
	sh := mustLoc(t, "Asia/Shanghai")
	first := time.Date(2025, 3, 1, 0, 0, 0, 0, sh)
	r := newRig(t, first)
	out := newFakeOut(r.clk)
	out.notify = make(chan delivery, 4)
	job := dailyReminder(MisfireRunOnce)
	// An earlier process saw the job on the 1st, then the daemon was down.
	j0, err := NewJobs(Options{Store: r.store, Jobs: []JobSpec{job}, Location: time.UTC, Out: out, Now: r.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := j0.Tick(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	r.clk.Set(time.Date(2025, 3, 3, 15, 0, 0, 0, sh))

	s, err := New(Options{Store: r.store, Jobs: []JobSpec{job}, Heartbeat: hbConfig("", 1, time.Hour), Location: sh, Out: out, Now: r.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.Start(ctx); err == nil {
		t.Fatal("second Start accepted")
	}
	select {
	case d := <-out.notify:
		if d.Text != "Stand-up in 15 minutes" {
			t.Fatalf("delivery %+v", d)
		}
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("startup misfire pass did not run the missed job")
	}
	entries := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.c.Entries())
	}
	if n := entries(); n != 3 { // heartbeat, sweep, daily
		t.Fatalf("%d cron entries, want 3", n)
	}
	tool := s.ScheduleTool()
	if _, err := tool.Call(chatCtx("telegram:3", "", ""), json.RawMessage(`{"action":"create","name":"later","text":"x","cron":"@every 1h"}`)); err != nil {
		t.Fatal(err)
	}
	if n := entries(); n != 4 {
		t.Fatalf("%d cron entries after create, want 4", n)
	}
	if err := s.Jobs().Delete(ctx, "later"); err != nil {
		t.Fatal(err)
	}
	if n := entries(); n != 3 {
		t.Fatalf("%d cron entries after delete, want 3", n)
	}
	s.Stop()
	s.Stop()
	runs, _ := r.store.ListRuns(context.Background(), "daily", 0)
	if len(runs) != 1 || runs[0].Status != RunOK || !runs[0].Scheduled.Equal(time.Date(2025, 3, 3, 9, 0, 0, 0, sh)) {
		t.Fatalf("runs %+v", runs)
	}
	var never Scheduler
	never.Stop() // Stop without Start
}
