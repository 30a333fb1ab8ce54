package heartbeat

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// Greetings and reminders tell the platform why they are sent
// (channels.WithPurpose), so one with a messaging window (WhatsApp) can use
// a template; a task's answer carries no purpose.
func TestDeliveriesCarryTheirPurpose(t *testing.T) {
	loc := mustLoc(t, "Europe/Berlin")
	day := time.Date(2025, 5, 6, 0, 0, 0, 0, loc)
	r := newHBRig(t, day, hbConfig("09:00-21:00", 4, time.Hour), loc)
	const key = "telegram:42"
	slot := r.h.Plan(key, day.Add(10*time.Hour)).Slots[0]
	r.userSaid(key, "Anna", "see you later", slot.Add(-5*time.Hour))
	if d := decisionFor(r.tick(slot), key); d.Action != ActionGreeted {
		t.Fatalf("no greeting: %+v", d)
	}
	if sent := r.out.Sent(); len(sent) != 1 || sent[0].Purpose != channels.PurposeGreeting {
		t.Fatalf("greeting deliveries %+v, want one with purpose %q", sent, channels.PurposeGreeting)
	}

	now := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
	j := newJobsRig(t, now, time.UTC,
		JobSpec{Name: "standup", Schedule: "0 9 * * *", Kind: KindReminder, Text: "Stand-up", DeliverTo: []string{"telegram:1"}},
		JobSpec{Name: "report", Schedule: "0 9 * * *", Kind: KindTask, Prompt: "Write the report", DeliverTo: []string{"telegram:2"}})
	j.tick(now)
	j.tick(time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC))
	got := map[string]channels.Purpose{}
	for _, d := range j.out.Sent() {
		got[d.Target] = d.Purpose
	}
	if len(got) != 2 || got["telegram:1"] != channels.PurposeReminder || got["telegram:2"] != "" {
		t.Fatalf("job deliveries' purposes %v, want the reminder's %q and none for the task", got, channels.PurposeReminder)
	}
}

// A greeting the platform refuses for good (WhatsApp outside its 24-hour
// window with no greeting template, a user who blocked the bot) uses its
// slot: the next tick neither asks the model again nor resends.
func TestGreetingRefusedForGoodUsesTheSlot(t *testing.T) {
	day := time.Date(2025, 2, 3, 0, 0, 0, 0, time.UTC)
	const key = "whatsapp:+4915112345678"
	r := newHBRig(t, day, hbConfig("", 1, time.Hour, key), time.UTC)
	slot := r.h.Plan(key, day.Add(time.Hour)).Slots[0]
	r.out.setFail(key, channels.Permanent(errors.New("outside the 24-hour window (131047)")))
	d := decisionFor(r.tick(slot), key)
	if d.Action != ActionFailed || !strings.Contains(d.Reason, "131047") {
		t.Fatalf("refused greeting: %+v", d)
	}
	calls := len(r.dir.Calls())
	if d := decisionFor(r.tick(slot.Add(time.Hour)), key); d.Action != ActionWaiting {
		t.Fatalf("the next tick: %+v, want waiting (the slot is used)", d)
	}
	if n := len(r.dir.Calls()); n != calls {
		t.Fatalf("the model was asked %d more time(s) for a greeting the platform refuses", n-calls)
	}
}
