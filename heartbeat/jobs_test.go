package heartbeat

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
	"github.com/switchboard-bot/switchboard/memory"
)

type jobsRig struct {
	*rig
	dir    *fakeDirecter
	out    *fakeOut
	jobs   []JobSpec
	loc    *time.Location
	j      *Jobs
	sent   *SentLog
	mu     sync.Mutex
	alerts []string
}

func newJobsRig(t *testing.T, start time.Time, loc *time.Location, jobs ...JobSpec) *jobsRig {
	r := &jobsRig{rig: newRig(t, start), dir: &fakeDirecter{}, jobs: jobs, loc: loc, sent: NewSentLog(0)}
	r.out = newFakeOut(r.clk)
	r.build()
	return r
}

func (r *jobsRig) build() {
	r.t.Helper()
	// Channels: the platform names the daemon passes (the registry's).
	j, err := NewJobs(Options{Store: r.store, Jobs: r.jobs, Location: r.loc, Agent: r.dir, Out: r.out, Now: r.clk.Now, Sent: r.sent,
		Channels: []string{"console", "telegram", "discord", "slack", "web"},
		Alert: func(_ context.Context, text string) {
			r.mu.Lock()
			r.alerts = append(r.alerts, text)
			r.mu.Unlock()
		}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.j = j
}

func (r *jobsRig) tick(now time.Time) {
	r.t.Helper()
	r.clk.Set(now)
	if err := r.j.Tick(context.Background(), now); err != nil {
		r.t.Fatalf("tick at %s: %v", now, err)
	}
}

func (r *jobsRig) Alerts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.alerts...)
}

func dailyReminder(misfire string) JobSpec {
	return JobSpec{Name: "daily", Schedule: "0 9 * * *", Timezone: "Asia/Shanghai", Kind: "reminder",
		Text: "Stand-up in 15 minutes", DeliverTo: []string{"telegram:1"}, Misfire: misfire, Grace: 5 * time.Minute}
}

// Thirty simulated days, hourly ticks, a daily 09:00 job in Asia/Shanghai and
// the daemon down from day 10 12:00 to day 12 15:00.
func TestThirtyDayWalkWithDowntime(t *testing.T) {
	sh := mustLoc(t, "Asia/Shanghai")
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, sh)
	downFrom := time.Date(2025, 3, 10, 12, 0, 0, 0, sh)
	upAgain := time.Date(2025, 3, 12, 15, 0, 0, 0, sh)
	end := time.Date(2025, 3, 31, 0, 0, 0, 0, sh)
	cases := []struct {
		misfire   string
		day12Runs int // runs delivered on the 12th (at restart)
	}{
		{MisfireSkip, 0},
		{MisfireRunOnce, 1},
	}
	for _, tc := range cases {
		t.Run(tc.misfire, func(t *testing.T) {
			r := newJobsRig(t, start, time.UTC, dailyReminder(tc.misfire))
			for now := start; now.Before(end); now = now.Add(time.Hour) {
				if !now.Before(downFrom) && now.Before(upAgain) {
					continue // the daemon is down
				}
				if now.Equal(upAgain) {
					r.restart()
					r.build()
				}
				r.tick(now)
			}
			perDay := map[int][]delivery{}
			for _, d := range r.out.Sent() {
				if d.Text != "Stand-up in 15 minutes" || d.Target != "telegram:1" {
					t.Fatalf("unexpected delivery %+v", d)
				}
				perDay[d.At.In(sh).Day()] = append(perDay[d.At.In(sh).Day()], d)
			}
			for day := 1; day <= 30; day++ {
				want := 1
				switch day {
				case 11:
					want = 0
				case 12:
					want = tc.day12Runs
				}
				got := perDay[day]
				if len(got) != want {
					t.Errorf("day %d: %d deliveries, want %d", day, len(got), want)
					continue
				}
				for _, d := range got {
					at := d.At.In(sh)
					if day == 12 {
						if !at.Equal(upAgain) {
							t.Errorf("day 12 catch-up at %s, want at restart %s", at, upAgain)
						}
					} else if at.Hour() != 9 || at.Minute() != 0 {
						t.Errorf("day %d delivered at %s, want 09:00 Asia/Shanghai", day, at)
					}
				}
			}
			runs, err := r.store.ListRuns(context.Background(), "daily", 0)
			if err != nil {
				t.Fatal(err)
			}
			var skipped []memory.JobRun
			ok := 0
			for _, run := range runs {
				switch run.Status {
				case RunSkipped:
					skipped = append(skipped, run)
				case RunOK:
					ok++
					if len(run.Deliveries) != 1 || run.Deliveries[0].Status != DeliveryDelivered || run.Deliveries[0].PlatformID == "" {
						t.Errorf("run %d deliveries %+v", run.ID, run.Deliveries)
					}
				default:
					t.Errorf("run %+v", run)
				}
			}
			if ok != len(r.out.Sent()) {
				t.Errorf("%d ok runs for %d deliveries", ok, len(r.out.Sent()))
			}
			if tc.misfire == MisfireSkip {
				if len(skipped) != 1 || !strings.Contains(skipped[0].Error, "missed 2 scheduled run(s)") ||
					!skipped[0].Scheduled.Equal(time.Date(2025, 3, 12, 9, 0, 0, 0, sh)) {
					t.Errorf("skipped runs %+v, want one covering 2 missed runs, latest 12th 09:00", skipped)
				}
			} else {
				if len(skipped) != 0 {
					t.Errorf("run_once recorded skipped runs %+v", skipped)
				}
				for _, run := range runs {
					if run.Started.Equal(upAgain) && !run.Scheduled.Equal(time.Date(2025, 3, 12, 9, 0, 0, 0, sh)) {
						t.Errorf("catch-up run scheduled %s, want the latest missed (12th 09:00)", run.Scheduled.In(sh))
					}
				}
			}
		})
	}
}

func TestLateTickWithinGraceRunsBeyondGraceIsMisfire(t *testing.T) {
	sh := mustLoc(t, "Asia/Shanghai")
	day := time.Date(2025, 3, 1, 0, 0, 0, 0, sh)
	r := newJobsRig(t, day, time.UTC, dailyReminder(MisfireSkip))
	r.tick(day) // first sighting
	r.tick(time.Date(2025, 3, 1, 9, 4, 0, 0, sh))
	if n := len(r.out.Sent()); n != 1 {
		t.Fatalf("4 minutes late (grace 5m): %d deliveries, want 1", n)
	}
	r.tick(time.Date(2025, 3, 2, 9, 6, 0, 0, sh))
	if n := len(r.out.Sent()); n != 1 {
		t.Fatalf("6 minutes late with misfire skip: %d deliveries, want still 1", n)
	}
}

func TestReminderFromScheduleToolDeliveredOnce(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	tool := NewScheduleTool(r.j)
	ctx := chatCtx("telegram:42", "buddy", "")
	res, err := tool.Call(ctx, []byte(`{"action":"create","kind":"reminder","text":"Take the pizza out","in":"2m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res, "in 2 minutes") {
		t.Errorf("tool result %q", res)
	}
	recs, _ := r.store.ListJobs(context.Background())
	if len(recs) != 1 {
		t.Fatalf("stored jobs %+v", recs)
	}
	info, err := r.j.Get(context.Background(), recs[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Spec.At.Equal(now.Add(2*time.Minute)) || info.Spec.CreatedBy != "telegram:42" || info.Spec.Persona != "buddy" ||
		len(info.Spec.DeliverTo) != 1 || info.Spec.DeliverTo[0] != "telegram:42" || !info.Next.Equal(now.Add(2*time.Minute)) {
		t.Fatalf("stored spec %+v next %s", info.Spec, info.Next)
	}
	for m := 1; m <= 5; m++ {
		r.tick(now.Add(time.Duration(m) * time.Minute))
	}
	sent := r.out.Sent()
	if len(sent) != 1 || sent[0].Text != "Take the pizza out" || sent[0].Target != "telegram:42" || !sent[0].At.Equal(now.Add(2*time.Minute)) {
		t.Fatalf("deliveries %+v", sent)
	}
	if n := len(r.dir.Calls()); n != 0 {
		t.Fatalf("a reminder called the model %d times", n)
	}
	if _, found, _ := r.store.GetJob(context.Background(), recs[0].Name); found {
		t.Fatal("one-shot still stored after success")
	}
}

func TestOneShotRetriedUntilDelivered(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	ctx := context.Background()
	if err := r.j.Create(ctx, JobSpec{Name: "pay-rent", Kind: KindReminder, Text: "Pay the rent", At: now.Add(time.Minute),
		DeliverTo: []string{"telegram:1", "telegram:2"}, Misfire: MisfireRunOnce, CreatedBy: "telegram:1"}); err != nil {
		t.Fatal(err)
	}
	r.out.setFail("telegram:2", errPlatformDown)
	r.tick(now.Add(time.Minute))
	r.tick(now.Add(time.Minute + 30*time.Second)) // before the retry delay
	if _, found, _ := r.store.GetJob(ctx, "pay-rent"); !found {
		t.Fatal("a partly failed one-shot was removed")
	}
	r.out.setFail("telegram:2", nil)
	r.tick(now.Add(2 * time.Minute))
	r.tick(now.Add(3 * time.Minute))
	var to1, to2 int
	for _, d := range r.out.Sent() {
		switch d.Target {
		case "telegram:1":
			to1++
		case "telegram:2":
			to2++
		}
	}
	if to1 != 1 || to2 != 1 {
		t.Fatalf("deliveries to 1: %d, to 2: %d; want exactly one each (retry only the failed target)", to1, to2)
	}
	if _, found, _ := r.store.GetJob(ctx, "pay-rent"); found {
		t.Fatal("one-shot not removed after success")
	}
}

func reportJob() JobSpec {
	return JobSpec{Name: "report", Schedule: "0 18 * * 1-5", Timezone: "Europe/Berlin", Kind: "task", Persona: "reporter",
		Prompt: "Summarize today's notes.", DeliverTo: []string{"telegram:1", "slack:C0123"}, Misfire: "skip", Grace: 5 * time.Minute}
}

func TestTaskToTwoTargetsWithSeparateStatuses(t *testing.T) {
	now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, reportJob())
	r.dir.answer = func(context.Context, directCall) (string, error) { return "3 notes today: all good.", nil }
	r.out.setFail("slack:C0123", errors.New("permanent: channel_not_found"))
	ctx := context.Background()

	run, err := r.j.RunNow(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != RunPartial || len(run.Deliveries) != 2 {
		t.Fatalf("run %+v", run)
	}
	d0, d1 := run.Deliveries[0], run.Deliveries[1]
	if d0.Target != "telegram:1" || d0.Status != DeliveryDelivered || d0.PlatformID != "m1" {
		t.Errorf("telegram delivery %+v", d0)
	}
	if d1.Target != "slack:C0123" || d1.Status != DeliveryFailed || !strings.Contains(d1.Error, "channel_not_found") {
		t.Errorf("slack delivery %+v", d1)
	}
	stored, _ := r.store.ListRuns(ctx, "report", 1)
	if len(stored) != 1 || stored[0].Status != RunPartial || stored[0].Finished.IsZero() || stored[0].Deliveries[1].Status != DeliveryFailed {
		t.Fatalf("stored run %+v", stored)
	}
	calls := r.dir.Calls()
	if len(calls) != 1 || calls[0].Session != "job:report" || calls[0].Text != "Summarize today's notes." ||
		calls[0].Opts.JobName != "report" || calls[0].Opts.Persona != "reporter" || calls[0].Opts.NoTools {
		t.Fatalf("model calls %+v", calls)
	}
	if len(r.Alerts()) != 0 {
		t.Fatalf("alerted after one failure: %v", r.Alerts())
	}
	// The failure streak alerts the admins once.
	for range 3 {
		if _, err := r.j.RunNow(ctx, "report"); err != nil {
			t.Fatal(err)
		}
	}
	if a := r.Alerts(); len(a) != 1 || !strings.Contains(a[0], `"report"`) || !strings.Contains(a[0], "channel_not_found") {
		t.Fatalf("alerts %v, want exactly one about report", a)
	}
	// Success resets the streak; a new streak alerts again.
	r.out.setFail("slack:C0123", nil)
	if run, _ := r.j.RunNow(ctx, "report"); run.Status != RunOK {
		t.Fatalf("run %+v", run)
	}
	r.out.setFail("slack:C0123", errPlatformDown)
	for range 2 {
		_, _ = r.j.RunNow(ctx, "report")
	}
	if a := r.Alerts(); len(a) != 2 {
		t.Fatalf("alerts %v, want a second one for the new streak", a)
	}
}

func TestTaskModelFailureRecorded(t *testing.T) {
	now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, reportJob())
	r.dir.answer = func(context.Context, directCall) (string, error) { return "", errors.New("model: 503 overloaded") }
	run, err := r.j.RunNow(context.Background(), "report")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != RunFailed || !strings.Contains(run.Error, "503 overloaded") || len(run.Deliveries) != 0 || len(r.out.Sent()) != 0 {
		t.Fatalf("run %+v, sent %+v", run, r.out.Sent())
	}
}

func TestPauseResumeListNextRuns(t *testing.T) {
	sh := mustLoc(t, "Asia/Shanghai")
	now := time.Date(2025, 3, 1, 8, 0, 0, 0, sh)
	r := newJobsRig(t, now, time.UTC, dailyReminder(MisfireRunOnce))
	ctx := context.Background()
	r.tick(now)
	next, err := r.j.NextRuns(ctx, "daily", 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range next {
		want := time.Date(2025, 3, 1+i, 9, 0, 0, 0, sh)
		if !n.Equal(want) || n.Location().String() != "Asia/Shanghai" {
			t.Errorf("next run %d = %s, want %s", i, n, want)
		}
	}
	if err := r.j.Pause(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	infos, _ := r.j.List(ctx)
	if len(infos) != 1 || !infos[0].Paused || !infos[0].Next.IsZero() || infos[0].Source != SourceConfig {
		t.Fatalf("list while paused %+v", infos)
	}
	r.tick(time.Date(2025, 3, 1, 9, 0, 0, 0, sh))
	r.tick(time.Date(2025, 3, 2, 9, 0, 0, 0, sh))
	if n := len(r.out.Sent()); n != 0 {
		t.Fatalf("paused job delivered %d times", n)
	}
	r.clk.Set(time.Date(2025, 3, 2, 10, 0, 0, 0, sh))
	if err := r.j.Resume(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	r.tick(time.Date(2025, 3, 2, 11, 0, 0, 0, sh))
	if n := len(r.out.Sent()); n != 0 {
		t.Fatalf("resume caught up runs missed while paused (run_once must not apply): %d", n)
	}
	r.tick(time.Date(2025, 3, 3, 9, 0, 0, 0, sh))
	if n := len(r.out.Sent()); n != 1 {
		t.Fatalf("after resume: %d deliveries, want 1", n)
	}
	infos, _ = r.j.List(ctx)
	if infos[0].LastRun == nil || infos[0].LastRun.Status != RunOK || !infos[0].Next.Equal(time.Date(2025, 3, 4, 9, 0, 0, 0, sh)) {
		t.Fatalf("list after a run %+v", infos[0])
	}
}

func TestDeleteAndErrors(t *testing.T) {
	now := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, dailyReminder(MisfireSkip))
	ctx := context.Background()
	if err := r.j.Delete(ctx, "daily"); !errors.Is(err, ErrConfigJob) {
		t.Fatalf("delete config job: %v", err)
	}
	if _, err := r.j.RunNow(ctx, "nope"); !errors.Is(err, ErrNoSuchJob) {
		t.Fatalf("run unknown: %v", err)
	}
	if err := r.j.Create(ctx, JobSpec{Name: "daily", Kind: KindReminder, Text: "x", Schedule: "@every 1h", DeliverTo: []string{"telegram:1"}}); !errors.Is(err, ErrJobNameInUse) {
		t.Fatalf("create over a config job: %v", err)
	}
	bad := []JobSpec{
		{Name: "Bad Name", Kind: KindReminder, Text: "x", Schedule: "@every 1h", DeliverTo: []string{"telegram:1"}},
		{Name: "a", Kind: "poem", Text: "x", Schedule: "@every 1h", DeliverTo: []string{"telegram:1"}},
		{Name: "a", Kind: KindTask, Schedule: "@every 1h", DeliverTo: []string{"telegram:1"}},
		{Name: "a", Kind: KindReminder, Text: "x", Schedule: "61 * * * *", DeliverTo: []string{"telegram:1"}},
		{Name: "a", Kind: KindReminder, Text: "x", Schedule: "@every 1h", DeliverTo: []string{"fax:1"}},
		{Name: "a", Kind: KindReminder, Text: "x", Schedule: "@every 1h"},
		{Name: "a", Kind: KindReminder, Text: "x", Schedule: "@every 1h", At: now, DeliverTo: []string{"telegram:1"}},
		{Name: "a", Kind: KindReminder, Text: "x", Schedule: "@every 1h", Timezone: "Mars/Olympus", DeliverTo: []string{"telegram:1"}},
	}
	for _, s := range bad {
		if err := r.j.Create(ctx, s); err == nil {
			t.Errorf("Create(%+v) accepted", s)
		}
	}
	if err := r.j.Create(ctx, JobSpec{Name: "hourly", Kind: KindReminder, Text: "drink water", Schedule: "@every 1h", DeliverTo: []string{"telegram:1"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.j.Delete(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.j.spec(ctx, "hourly"); !errors.Is(err, ErrNoSuchJob) {
		t.Fatalf("deleted job still found: %v", err)
	}
}

func TestOccurrencesAfterLongDowntimeIsBounded(t *testing.T) {
	s, err := schedule.Parse("@every 1s", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := after.Add(48 * time.Hour)
	latest, n := occurrences(s, after, now)
	if n == 0 || latest.After(now) || now.Sub(latest) > 2*time.Second {
		t.Fatalf("occurrences = %s, %d", latest, n)
	}
	daily, _ := schedule.Parse("0 9 * * *", mustLoc(t, "Asia/Shanghai"))
	latest, n = occurrences(daily, after, after.Add(72*time.Hour))
	if n != 3 || !latest.Equal(time.Date(2025, 1, 3, 9, 0, 0, 0, mustLoc(t, "Asia/Shanghai"))) {
		t.Fatalf("daily occurrences = %s, %d", latest, n)
	}
}

func TestParseInAndAt(t *testing.T) {
	ok := map[string]time.Duration{
		"20m": 20 * time.Minute, "2h30m": 150 * time.Minute, "in 20 minutes": 20 * time.Minute, "1 day": 24 * time.Hour,
		"1h 15m": 75 * time.Minute, "90 secs": 90 * time.Second, "2 hours and 5 minutes": 125 * time.Minute, "1w": 7 * 24 * time.Hour,
	}
	for in, want := range ok {
		if got, err := parseIn(in); err != nil || got != want {
			t.Errorf("parseIn(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "-5m", "0s", "5 parsecs", "20m later"} {
		if got, err := parseIn(in); err == nil {
			t.Errorf("parseIn(%q) = %s, want an error", in, got)
		}
	}
	berlin := mustLoc(t, "Europe/Berlin")
	at, err := parseAt("2025-03-30 09:00", berlin)
	if err != nil || !at.Equal(time.Date(2025, 3, 30, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("parseAt local = %s, %v", at, err)
	}
	at, err = parseAt("2025-03-30T09:00:00+08:00", berlin)
	if err != nil || !at.Equal(time.Date(2025, 3, 30, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("parseAt RFC3339 = %s, %v", at, err)
	}
	if _, err := parseAt("next tuesday", berlin); err == nil {
		t.Error("parseAt accepted prose")
	}
}

func FuzzParseIn(f *testing.F) {
	for _, s := range []string{"20m", "in 2 hours", "1 day and 3 hours", "90 secs", "-5m", "1.5h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseIn(s)
		if err == nil && d <= 0 {
			t.Fatalf("parseIn(%q) = %s without error", s, d)
		}
	})
}
