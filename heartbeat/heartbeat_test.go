package heartbeat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

func hbConfig(active string, perDay int, idle time.Duration, targets ...string) Config {
	return Config{Enabled: true, Schedule: "0 * * * *", ActiveHours: active, IdleAfter: idle, MaxPerDay: perDay, Targets: targets}
}

func TestPlanActiveHoursAcrossMidnightAndDST(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	utc := func(s string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		name    string
		active  string
		now     time.Time
		in      bool
		day     string
		winLen  time.Duration // real length of the window (DST aware)
		winFrom string        // local wall time the window opens
	}{
		{"night window before midnight", "22:00-06:00", at("2025-03-29 23:30"), true, "2025-03-29", 7 * time.Hour, "2025-03-29 22:00"},
		{"night window after spring-forward", "22:00-06:00", at("2025-03-30 03:30"), true, "2025-03-29", 7 * time.Hour, "2025-03-29 22:00"},
		{"night window closed at 06:00", "22:00-06:00", at("2025-03-30 06:00"), false, "2025-03-30", 8 * time.Hour, "2025-03-30 22:00"},
		{"night window in the afternoon is closed", "22:00-06:00", at("2025-03-30 14:00"), false, "2025-03-30", 8 * time.Hour, "2025-03-30 22:00"},
		{"night window across fall-back", "22:00-06:00", at("2025-10-26 05:59"), true, "2025-10-25", 9 * time.Hour, "2025-10-25 22:00"},
		{"day window before opening", "09:00-21:00", at("2025-03-30 08:59"), false, "2025-03-30", 12 * time.Hour, "2025-03-30 09:00"},
		{"day window opening", "09:00-21:00", at("2025-03-30 09:00"), true, "2025-03-30", 12 * time.Hour, "2025-03-30 09:00"},
		{"day window last minute", "09:00-21:00", at("2025-03-30 20:59"), true, "2025-03-30", 12 * time.Hour, "2025-03-30 09:00"},
		{"day window closed shows tomorrow", "09:00-21:00", at("2025-03-30 21:00"), false, "2025-03-31", 12 * time.Hour, "2025-03-31 09:00"},
		// 07:30 UTC is 08:30 CET the day before the change and 09:30 CEST after it.
		{"same UTC hour before DST is outside", "09:00-21:00", utc("2025-03-29 07:30"), false, "2025-03-29", 12 * time.Hour, "2025-03-29 09:00"},
		{"same UTC hour after DST is inside", "09:00-21:00", utc("2025-03-30 07:30"), true, "2025-03-30", 12 * time.Hour, "2025-03-30 09:00"},
		{"all day on spring-forward is 23h", "", at("2025-03-30 12:00"), true, "2025-03-30", 23 * time.Hour, "2025-03-30 00:00"},
		{"all day on fall-back is 25h", "", at("2025-10-26 12:00"), true, "2025-10-26", 25 * time.Hour, "2025-10-26 00:00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.now)
			h, err := NewHeartbeat(Options{Store: r.store, Heartbeat: hbConfig(tc.active, 3, time.Hour), Location: berlin, Now: r.clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			p := h.Plan("telegram:1", tc.now)
			if p.InWindow != tc.in || p.Day != tc.day {
				t.Fatalf("Plan(%s) = in %v day %s, want in %v day %s", tc.now.In(berlin), p.InWindow, p.Day, tc.in, tc.day)
			}
			if got := p.WindowEnd.Sub(p.WindowStart); got != tc.winLen {
				t.Errorf("window length %s, want %s", got, tc.winLen)
			}
			if got := p.WindowStart.In(berlin).Format("2006-01-02 15:04"); got != tc.winFrom {
				t.Errorf("window opens %s, want %s", got, tc.winFrom)
			}
			if len(p.Slots) != 3 {
				t.Fatalf("slots %v, want 3", p.Slots)
			}
			for i, s := range p.Slots {
				if s.Before(p.WindowStart) || !s.Before(p.WindowEnd) || (i > 0 && s.Before(p.Slots[i-1])) || s.Minute() != 0 || s.Second() != 0 {
					t.Errorf("slot %d %s not ordered on an hourly tick inside [%s, %s)", i, s, p.WindowStart, p.WindowEnd)
				}
			}
		})
	}
}

func TestPlanUsesTargetTimezone(t *testing.T) {
	tokyo := mustLoc(t, "Asia/Tokyo")
	now := time.Date(2025, 6, 1, 1, 0, 0, 0, time.UTC) // 10:00 in Tokyo, 01:00 UTC
	r := newRig(t, now)
	h, err := NewHeartbeat(Options{Store: r.store, Heartbeat: hbConfig("09:00-21:00", 2, time.Hour), Location: time.UTC,
		TargetLocation: func(tg string) *time.Location {
			if tg == "telegram:tokyo" {
				return tokyo
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Plan("telegram:tokyo", now).InWindow {
		t.Error("10:00 in Tokyo should be inside 09:00-21:00")
	}
	if h.Plan("telegram:utc", now).InWindow {
		t.Error("01:00 UTC should be outside 09:00-21:00 for a target in the bot's zone")
	}
}

// hbRig is a heartbeat over a real store with fake agent and outbound path.
type hbRig struct {
	*rig
	dir  *fakeDirecter
	out  *fakeOut
	busy *fakeBusy
	cfg  Config
	loc  *time.Location
	h    *Heartbeat
}

func newHBRig(t *testing.T, start time.Time, cfg Config, loc *time.Location) *hbRig {
	r := &hbRig{rig: newRig(t, start), dir: &fakeDirecter{}, busy: &fakeBusy{}, cfg: cfg, loc: loc}
	r.out = newFakeOut(r.clk)
	r.build()
	return r
}

func (r *hbRig) build() {
	r.t.Helper()
	h, err := NewHeartbeat(Options{Store: r.store, Heartbeat: r.cfg, Location: r.loc, Agent: r.dir, Out: r.out, Busy: r.busy,
		Now: r.clk.Now, GreetingHints: func(p string) string { return "hints of " + p }})
	if err != nil {
		r.t.Fatal(err)
	}
	r.h = h
}

func (r *hbRig) tick(now time.Time) []Decision {
	r.t.Helper()
	r.clk.Set(now)
	ds, err := r.h.Tick(context.Background(), now)
	if err != nil && !strings.Contains(err.Error(), "delivery") {
		r.t.Fatalf("tick at %s: %v", now, err)
	}
	return ds
}

func decisionFor(ds []Decision, target string) Decision {
	for _, d := range ds {
		if d.Target == target {
			return d
		}
	}
	return Decision{}
}

func TestIdleThresholdAndNoRepeat(t *testing.T) {
	loc := mustLoc(t, "Europe/Berlin")
	day := time.Date(2025, 5, 6, 0, 0, 0, 0, loc)
	r := newHBRig(t, day, hbConfig("09:00-21:00", 4, time.Hour), loc)
	const key = "telegram:42"
	slot := r.h.Plan(key, day.Add(10*time.Hour)).Slots[0] // in [09:00, 12:00)
	r.userSaid(key, "Anna", "see you later", slot.Add(-30*time.Minute))

	if d := decisionFor(r.tick(slot.Add(-time.Minute)), key); d.Action != ActionWaiting || !strings.Contains(d.Reason, "next greeting slot") {
		t.Fatalf("before the slot: %+v", d)
	}
	if d := decisionFor(r.tick(slot), key); d.Action != ActionWaiting || !strings.Contains(d.Reason, "the user wrote 30 minutes ago") {
		t.Fatalf("at the slot, user active 30m ago: %+v", d)
	}
	if n := len(r.dir.Calls()); n != 0 {
		t.Fatalf("model called %d times while nobody was eligible", n)
	}
	later := slot.Add(31 * time.Minute)
	d := decisionFor(r.tick(later), key)
	if d.Action != ActionGreeted || d.Message != "Hello there!" {
		t.Fatalf("after idle_after: %+v", d)
	}
	sent := r.out.Sent()
	if len(sent) != 1 || sent[0].Target != key || sent[0].Text != "Hello there!" {
		t.Fatalf("deliveries %+v", sent)
	}
	// The same tick again, and one a minute later: the slot is used.
	if d := decisionFor(r.tick(later), key); d.Action != ActionWaiting {
		t.Fatalf("repeat tick: %+v", d)
	}
	if d := decisionFor(r.tick(later.Add(time.Minute)), key); d.Action != ActionWaiting {
		t.Fatalf("a minute later: %+v", d)
	}
	if n := len(r.out.Sent()); n != 1 {
		t.Fatalf("greeting delivered %d times, want once", n)
	}
	// The greeting is in the chat's session as an assistant message, and it
	// does not count as user activity.
	hist, err := r.store.LoadHistory(context.Background(), key, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1]
	if last.Role != memory.RoleAssistant || last.Content != "Hello there!" || hist[len(hist)-2].Role != memory.RoleAssistant {
		t.Fatalf("session tail %+v", hist[len(hist)-2:])
	}
	meta, _, _ := r.store.Session(context.Background(), key)
	if !meta.LastUserMessage.Equal(slot.Add(-30 * time.Minute)) {
		t.Fatalf("LastUserMessage moved to %s", meta.LastUserMessage)
	}
	// The instruction went to a side session and carried the chat's context.
	calls := r.dir.Calls()
	if len(calls) != 1 || calls[0].Session != "heartbeat:"+key || !calls[0].Opts.NoTools {
		t.Fatalf("model calls %+v", calls)
	}
	for _, want := range []string{"Anna", "morning", "see you later", "hints of", `{"action":"greet"`} {
		if !strings.Contains(calls[0].Text, want) {
			t.Errorf("instruction lacks %q:\n%s", want, calls[0].Text)
		}
	}
}

func TestSlotsStableAcrossRestart(t *testing.T) {
	loc := mustLoc(t, "Asia/Shanghai")
	day := time.Date(2025, 7, 14, 0, 0, 0, 0, loc)
	const key = "discord:555"
	r := newHBRig(t, day, hbConfig("08:00-22:00", 3, 0, key), loc)
	plan1 := r.h.Plan(key, day.Add(12*time.Hour))
	offsets := map[time.Duration]bool{}
	for d := range 7 {
		p := r.h.Plan(key, day.Add(time.Duration(24*d+12)*time.Hour))
		offsets[p.Slots[0].Sub(p.WindowStart)] = true
	}
	if len(offsets) < 2 {
		t.Errorf("the first slot has the same offset on 7 days %v; slots should be seeded by date", offsets)
	}
	if d := decisionFor(r.tick(plan1.Slots[0]), key); d.Action != ActionGreeted {
		t.Fatalf("first slot: %+v", d)
	}

	r.restart()
	r.build()
	plan2 := r.h.Plan(key, day.Add(12*time.Hour))
	for i := range plan1.Slots {
		if !plan1.Slots[i].Equal(plan2.Slots[i]) {
			t.Fatalf("slot %d moved across restart: %s → %s", i, plan1.Slots[i], plan2.Slots[i])
		}
	}
	if d := decisionFor(r.tick(plan1.Slots[0].Add(time.Minute)), key); d.Action != ActionWaiting {
		t.Fatalf("after restart the used slot fired again: %+v", d)
	}
	if d := decisionFor(r.tick(plan1.Slots[1]), key); d.Action != ActionGreeted {
		t.Fatalf("second slot after restart: %+v", d)
	}
	if n := len(r.out.Sent()); n != 2 {
		t.Fatalf("%d greetings, want 2", n)
	}
}

func TestMaxPerDayOverSimulatedDays(t *testing.T) {
	loc := mustLoc(t, "Europe/Berlin")
	start := time.Date(2025, 3, 28, 0, 0, 0, 0, loc) // walks over the DST change
	const key = "telegram:7"
	r := newHBRig(t, start, hbConfig("22:00-06:00", 2, 0, key), loc)
	for now := start; now.Before(start.Add(4 * 24 * time.Hour)); now = now.Add(30 * time.Minute) {
		r.tick(now)
	}
	perDay := map[string][]time.Time{}
	for _, d := range r.out.Sent() {
		p := r.h.Plan(key, d.At)
		if !p.InWindow {
			t.Errorf("greeting at %s outside active hours", d.At.In(loc))
		}
		perDay[p.Day] = append(perDay[p.Day], d.At)
	}
	// Windows opening on 27th (partial, from 00:00 on the 28th) .. 31st.
	for _, day := range []string{"2025-03-28", "2025-03-29", "2025-03-30"} {
		got := perDay[day]
		if len(got) != 2 {
			t.Errorf("window of %s: %d greetings %v, want 2", day, len(got), got)
			continue
		}
		slots := r.h.Plan(key, got[0]).Slots
		for i := range got {
			if got[i].Before(slots[i]) || got[i].Sub(slots[i]) >= 30*time.Minute {
				t.Errorf("window of %s: greeting %d at %s, slot at %s", day, i, got[i].In(loc), slots[i].In(loc))
			}
		}
	}
	for day, got := range perDay {
		if len(got) > 2 {
			t.Errorf("window of %s: %d greetings, max_per_day is 2", day, len(got))
		}
	}
}

func TestBusySessionDefers(t *testing.T) {
	loc := time.UTC
	day := time.Date(2025, 2, 3, 0, 0, 0, 0, loc)
	const key = "slack:D123"
	r := newHBRig(t, day, hbConfig("09:00-21:00", 1, time.Hour, key), loc)
	slot := r.h.Plan(key, day.Add(12*time.Hour)).Slots[0]
	r.busy.set(key, true)
	if d := decisionFor(r.tick(slot), key); d.Action != ActionWaiting || !strings.Contains(d.Reason, "turn is running") {
		t.Fatalf("busy: %+v", d)
	}
	if n := len(r.dir.Calls()); n != 0 {
		t.Fatalf("model called %d times for a busy chat", n)
	}
	r.busy.set(key, false)
	next := slot.Add(time.Minute)
	if d := decisionFor(r.tick(next), key); d.Action != ActionGreeted {
		t.Fatalf("after busy: %+v (the due slot must stay due)", d)
	}
}

func TestFailedDeliveryRetriedSuccessNotRepeated(t *testing.T) {
	loc := time.UTC
	day := time.Date(2025, 2, 3, 0, 0, 0, 0, loc)
	const key = "telegram:99"
	r := newHBRig(t, day, hbConfig("", 1, time.Hour, key), loc)
	slot := r.h.Plan(key, day.Add(time.Hour)).Slots[0]
	r.out.setFail(key, errPlatformDown)
	d := decisionFor(r.tick(slot), key)
	if d.Action != ActionFailed || !strings.Contains(d.Reason, "502") {
		t.Fatalf("failing delivery: %+v", d)
	}
	raw, _, _ := r.store.KVGet(context.Background(), kvDayState+key)
	var st dayState
	_ = json.Unmarshal(raw, &st)
	if st.Used != 0 {
		t.Fatalf("a failed delivery used the slot: %+v", st)
	}
	if hist, _ := r.store.LoadHistory(context.Background(), key, 0); len(hist) != 0 {
		t.Fatalf("undelivered greeting saved into the session: %+v", hist)
	}
	r.out.setFail(key, nil)
	if d := decisionFor(r.tick(slot.Add(time.Minute)), key); d.Action != ActionGreeted {
		t.Fatalf("retry: %+v", d)
	}
	if d := decisionFor(r.tick(slot.Add(2*time.Minute)), key); d.Action != ActionWaiting {
		t.Fatalf("after success: %+v", d)
	}
	sent := r.out.Sent()
	if len(sent) != 1 {
		t.Fatalf("delivered %d times, want 1", len(sent))
	}
	if hist, _ := r.store.LoadHistory(context.Background(), key, 0); len(hist) != 1 || hist[0].Content != "Hello there!" {
		t.Fatalf("session %+v", hist)
	}
}

func TestModelDeclinesOrAnswersToken(t *testing.T) {
	for _, ans := range []string{`{"action":"skip","reason":"it is too late for small talk"}`, "HEARTBEAT_OK", "```json\n{\"action\":\"greet\",\"message\":\"NO_REPLY\"}\n```"} {
		t.Run(ans, func(t *testing.T) {
			day := time.Date(2025, 2, 3, 0, 0, 0, 0, time.UTC)
			const key = "telegram:5"
			r := newHBRig(t, day, hbConfig("", 1, 0, key), time.UTC)
			r.dir.answer = func(context.Context, directCall) (string, error) { return ans, nil }
			slot := r.h.Plan(key, day).Slots[0]
			if d := decisionFor(r.tick(slot), key); d.Action != ActionDeclined {
				t.Fatalf("%+v", d)
			}
			if d := decisionFor(r.tick(slot.Add(time.Minute)), key); d.Action != ActionWaiting {
				t.Fatalf("declined slot asked again: %+v", d)
			}
			if n := len(r.out.Sent()); n != 0 {
				t.Fatalf("%d deliveries of a declined greeting", n)
			}
			if n := len(r.dir.Calls()); n != 1 {
				t.Fatalf("%d model calls, want 1", n)
			}
		})
	}
}

func TestNoModelCallWithoutEligibleTarget(t *testing.T) {
	day := time.Date(2025, 2, 3, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		cfg   Config
		setup func(r *hbRig)
		now   time.Time
	}{
		{"no sessions at all", hbConfig("", 2, time.Hour), func(*hbRig) {}, day.Add(23 * time.Hour)},
		{"disabled", func() Config { c := hbConfig("", 2, 0, "telegram:1"); c.Enabled = false; return c }(), func(*hbRig) {}, day.Add(23 * time.Hour)},
		{"switched off", hbConfig("", 2, 0, "telegram:1"), func(r *hbRig) { _ = r.h.SetEnabled(context.Background(), false) }, day.Add(23 * time.Hour)},
		{"outside active hours", hbConfig("09:00-10:00", 2, 0, "telegram:1"), func(*hbRig) {}, day.Add(23 * time.Hour)},
		{"only threads, jobs and old chats", hbConfig("", 2, time.Hour), func(r *hbRig) {
			r.userSaid("slack:C1:1700000000.1", "x", "in a thread", day)
			r.userSaid("job:report", "x", "job", day)
			r.userSaid("cli:local", "x", "cli", day)
			r.userSaid("telegram:old", "x", "long ago", day.Add(-31*24*time.Hour))
		}, day.Add(23 * time.Hour)},
		{"user active", hbConfig("", 2, 24*time.Hour), func(r *hbRig) { r.userSaid("telegram:1", "x", "hi", day.Add(22*time.Hour)) }, day.Add(23 * time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newHBRig(t, day, tc.cfg, time.UTC)
			tc.setup(r)
			for _, d := range r.tick(tc.now) {
				if d.Action != ActionWaiting {
					t.Errorf("decision %+v", d)
				}
			}
			if n := len(r.dir.Calls()); n != 0 {
				t.Fatalf("%d model calls on a tick without eligible targets", n)
			}
		})
	}
}

func TestDefaultTargetsAreRecentDirectChats(t *testing.T) {
	day := time.Date(2025, 2, 3, 0, 0, 0, 0, time.UTC)
	r := newHBRig(t, day, hbConfig("", 1, time.Hour), time.UTC)
	r.userSaid("telegram:1", "A", "hi", day.Add(-2*24*time.Hour))
	r.userSaid("telegram:old", "B", "hi", day.Add(-40*24*time.Hour))
	r.userSaid("slack:C1:1700000000.1", "C", "hi", day.Add(-2*24*time.Hour))
	r.userSaid("cli:local", "D", "hi", day.Add(-2*24*time.Hour))
	cands, err := r.h.targets(context.Background(), day)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 1 || cands[0].key != "telegram:1" {
		t.Fatalf("targets %+v, want only telegram:1", cands)
	}
}

func TestEnabledSwitchPersistsAndOverridesConfig(t *testing.T) {
	day := time.Date(2025, 2, 3, 0, 0, 0, 0, time.UTC)
	cfg := hbConfig("", 1, 0)
	cfg.Enabled = false
	r := newHBRig(t, day, cfg, time.UTC)
	ctx := context.Background()
	if r.h.Enabled(ctx) {
		t.Fatal("enabled with heartbeat.enabled false and no switch")
	}
	if err := r.h.SetEnabled(ctx, true); err != nil {
		t.Fatal(err)
	}
	r.restart()
	r.build()
	if !r.h.Enabled(ctx) {
		t.Fatal("/heartbeat on did not survive a restart")
	}
	r.cfg.Enabled = true
	r.build()
	if err := r.h.SetEnabled(ctx, false); err != nil {
		t.Fatal(err)
	}
	if r.h.Enabled(ctx) {
		t.Fatal("/heartbeat off did not override heartbeat.enabled true")
	}
}

func TestModelErrorKeepsSlotDue(t *testing.T) {
	day := time.Date(2025, 2, 3, 0, 0, 0, 0, time.UTC)
	const key = "telegram:5"
	r := newHBRig(t, day, hbConfig("", 1, 0, key), time.UTC)
	fail := true
	r.dir.answer = func(context.Context, directCall) (string, error) {
		if fail {
			return "", context.DeadlineExceeded
		}
		return "Good morning! Coffee yet?", nil
	}
	slot := r.h.Plan(key, day).Slots[0]
	r.clk.Set(slot)
	if _, err := r.h.Tick(context.Background(), slot); err == nil {
		t.Fatal("model failure not reported")
	}
	fail = false
	if d := decisionFor(r.tick(slot.Add(time.Hour)), key); d.Action != ActionGreeted || d.Message != "Good morning! Coffee yet?" {
		t.Fatalf("retry after model error: %+v", d)
	}
}
