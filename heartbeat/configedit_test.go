package heartbeat

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Editing a config job's schedule (or time zone), or removing it and adding
// it back, is not downtime: the runs the old schedule did not have (or that
// fell due while the job was gone) are neither run at once (misfire
// run_once) nor recorded as missed "while the daemon was down" (skip); the
// job starts afresh, and runs at its next time.
func TestConfigEditIsNotMistakenForDowntime(t *testing.T) {
	day := time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)
	for _, misfire := range []string{MisfireSkip, MisfireRunOnce} {
		t.Run(misfire, func(t *testing.T) {
			job := JobSpec{Name: "report", Schedule: "0 18 * * *", Timezone: "UTC", Kind: KindReminder, Text: "report",
				DeliverTo: []string{"telegram:1"}, Misfire: misfire}
			r := newJobsRig(t, day, time.UTC, job)
			r.tick(day)
			r.tick(day.Add(18 * time.Hour)) // the 18:00 run
			sent := func() int { return len(r.out.Sent()) }
			if sent() != 1 {
				t.Fatalf("%d deliveries, want the 18:00 run", sent())
			}
			set := func(jobs ...JobSpec) {
				t.Helper()
				if err := r.j.SetConfigJobs(jobs); err != nil {
					t.Fatal(err)
				}
			}

			// Next day at noon the operator moves it to 09:00.
			noon := day.Add(36 * time.Hour)
			r.tick(noon)
			job.Schedule = "0 9 * * *"
			set(job)
			r.tick(noon.Add(time.Minute))
			if sent() != 1 {
				t.Errorf("moving the job to 09:00 at noon ran it at once (%d deliveries)", sent())
			}
			r.tick(noon.Add(21 * time.Hour)) // 09:00 the day after
			if sent() != 2 {
				t.Errorf("%d deliveries after the new 09:00, want 2", sent())
			}

			// Then in New York time, at 13:30 UTC: 09:00 EDT (13:00 UTC) has
			// just passed, after the 09:00 UTC run.
			ny := noon.Add(24*time.Hour + 90*time.Minute)
			r.tick(ny)
			job.Timezone = "America/New_York"
			set(job)
			r.tick(ny.Add(time.Minute))
			if sent() != 2 {
				t.Errorf("changing the zone to America/New_York ran the job at once (%d deliveries)", sent())
			}

			// Removed for a week, then added back in the afternoon.
			set()
			back := ny.Add(7 * 24 * time.Hour)
			r.tick(back)
			set(job)
			r.tick(back.Add(time.Minute))
			if sent() != 2 {
				t.Errorf("adding the job back ran it at once (%d deliveries)", sent())
			}
			r.tick(time.Date(2025, 6, 12, 13, 0, 0, 0, time.UTC)) // the next 09:00 EDT
			if sent() != 3 {
				t.Errorf("%d deliveries after the job's next 09:00 EDT, want 3", sent())
			}

			runs, err := r.store.ListRuns(context.Background(), "report", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, run := range runs {
				if strings.Contains(run.Error, "while the daemon was down") {
					t.Errorf("run %+v: the daemon was never down", run)
				}
			}
		})
	}
}
