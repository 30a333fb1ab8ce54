package heartbeat

import (
	"testing"
	"time"
)

// Greeting slots that fell due while the user was busy talking (or the
// daemon was down) are not caught up one per tick: the first greeting after
// them uses them all, and a slot less than half a segment (the window over
// max_per_day) after a greeting goes with it, so greetings stay spread out.
func TestMissedGreetingSlotsCollapseIntoOne(t *testing.T) {
	loc := mustLoc(t, "Europe/Berlin")
	day := time.Date(2025, 5, 6, 0, 0, 0, 0, loc)
	const key = "telegram:42"
	cfg := Config{Enabled: true, Schedule: "*/5 * * * *", ActiveHours: "09:00-21:00", IdleAfter: time.Hour, MaxPerDay: 4}
	r := newHBRig(t, day, cfg, loc)
	slots := r.h.Plan(key, day.Add(12*time.Hour)).Slots // one in each 3h segment
	// The user talks with the bot until 17:00, so the first three slots pass.
	for at := day.Add(9 * time.Hour); !at.After(day.Add(17 * time.Hour)); at = at.Add(30 * time.Minute) {
		r.userSaid(key, "Anna", "still here", at)
	}
	for now := day.Add(8 * time.Hour); now.Before(day.Add(21 * time.Hour)); now = now.Add(5 * time.Minute) {
		r.tick(now)
	}
	idle := day.Add(18 * time.Hour) // an hour after the user's last message
	var got []time.Time
	for _, d := range r.out.Sent() {
		got = append(got, d.At)
	}
	if len(got) == 0 || !got[0].Equal(idle) {
		t.Fatalf("greetings at %v; want the first at 18:00, when the user had been idle an hour", got)
	}
	if len(got) > 2 {
		t.Errorf("greetings at %v (slots %v): the three slots missed while the user talked make one greeting", got, slots)
	}
	if len(got) == 2 && got[1].Sub(got[0]) < 90*time.Minute {
		t.Errorf("greetings at %v: the second came %s after the first; slots are 3h apart (want at least half of that)",
			got, got[1].Sub(got[0]))
	}
}
