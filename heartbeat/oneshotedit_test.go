package heartbeat

import (
	"context"
	"testing"
	"time"
)

// An operator who gives a config one-shot that already ran (or gave up) a
// new `at` time gets a reminder at that time: the job is not left "done".
func TestConfigOneShotWithNewAtRunsAgain(t *testing.T) {
	now := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
	job := JobSpec{Name: "dentist", At: now.Add(time.Hour), Kind: KindReminder, Text: "Dentist at 10",
		DeliverTo: []string{"telegram:1"}}
	r := newJobsRig(t, now, time.UTC, job)
	r.tick(now)
	r.tick(now.Add(time.Hour))
	if n := len(r.out.Sent()); n != 1 {
		t.Fatalf("%d deliveries at the first at time, want 1", n)
	}

	// Next week's appointment, under the same name.
	job.At = now.Add(7 * 24 * time.Hour)
	if err := r.j.SetConfigJobs([]JobSpec{job}); err != nil {
		t.Fatal(err)
	}
	r.tick(now.Add(2 * time.Hour))
	if n := len(r.out.Sent()); n != 1 {
		t.Fatalf("the edited one-shot ran before its new time (%d deliveries)", n)
	}
	info, err := r.j.Get(context.Background(), "dentist")
	if err != nil {
		t.Fatal(err)
	}
	if info.Done || !info.Next.Equal(job.At) {
		t.Fatalf("after the edit: done=%v next=%s, want pending for %s", info.Done, info.Next, job.At)
	}
	r.tick(job.At)
	r.tick(job.At.Add(time.Minute))
	if n := len(r.out.Sent()); n != 2 {
		t.Fatalf("%d deliveries after the new at time, want 2", n)
	}
}
