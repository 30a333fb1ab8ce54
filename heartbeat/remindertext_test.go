package heartbeat

import (
	"context"
	"testing"
	"time"
)

// A reminder's text is delivered as written, however it looks: short
// upper-case reminders ("PAY RENT", "GYM") are not model status tokens.
// (A task's answer that is a bare status token is still not delivered.)
func TestShortUpperCaseRemindersAreDelivered(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	ctx := context.Background()
	texts := []string{"PAY RENT", "GYM", "LUNCH!", "TAXES_DUE", "CALL MOM"}
	for i, text := range texts {
		if err := r.j.Create(ctx, JobSpec{Name: "r" + string(rune('a'+i)), Kind: KindReminder, Text: text,
			At: now.Add(time.Minute), DeliverTo: []string{"telegram:1"}, Misfire: MisfireRunOnce}); err != nil {
			t.Fatal(err)
		}
	}
	r.tick(now.Add(time.Minute))
	got := map[string]bool{}
	for _, d := range r.out.Sent() {
		got[d.Text] = true
	}
	for _, text := range texts {
		if !got[text] {
			t.Errorf("reminder %q was not delivered (sent: %v)", text, r.out.Sent())
		}
	}

	r.dir.answer = func(context.Context, directCall) (string, error) { return "NO_REPLY", nil }
	if err := r.j.Create(ctx, JobSpec{Name: "digest", Kind: KindTask, Prompt: "anything new?", Schedule: "@daily",
		DeliverTo: []string{"telegram:1"}}); err != nil {
		t.Fatal(err)
	}
	run, err := r.j.RunNow(ctx, "digest")
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Deliveries) != 1 || run.Deliveries[0].Status != DeliverySkipped || len(r.out.Sent()) != len(texts) {
		t.Fatalf("a task answering NO_REPLY: run %+v, sent %v", run, r.out.Sent())
	}
}
