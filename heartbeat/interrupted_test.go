package heartbeat

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// stuckOut is a Deliverer whose sends never return until released: the
// daemon is killed while the platform call is in flight.
type stuckOut struct {
	entered chan struct{}
	release chan struct{}
}

func (s *stuckOut) Deliver(ctx context.Context, _ channels.Target, _, _ string) ([]string, error) {
	close(s.entered)
	<-s.release
	return nil, errors.New("killed")
}

// A recurring job whose run the daemon did not finish (killed just before
// or during its delivery) is run again at the restart under the misfire
// rules, once (a resumed run that is killed as well is not run a third
// time); an interrupted run does not stay "running" forever.
func TestRecurringRunInterruptedByKillIsResumed(t *testing.T) {
	day := time.Date(2025, 6, 2, 8, 0, 0, 0, time.UTC)
	job := JobSpec{Name: "standup", Schedule: "0 9 * * *", Timezone: "UTC", Kind: KindReminder,
		Text: "Stand-up in 15 minutes", DeliverTo: []string{"telegram:1"}, Grace: 5 * time.Minute}
	for _, tc := range []struct {
		name      string
		misfire   string
		kills     int           // the resumed run is killed too
		restartAt time.Duration // after 09:00
		delivered int
	}{
		{"restart within grace", MisfireSkip, 1, time.Minute, 1},
		{"late restart, misfire skip", MisfireSkip, 1, time.Hour, 0},
		{"late restart, misfire run_once", MisfireRunOnce, 1, time.Hour, 1},
		{"resumed run killed too", MisfireSkip, 2, 2 * time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := job
			job.Misfire = tc.misfire
			r := newJobsRig(t, day, time.UTC, job)
			r.tick(day) // first sighting
			nine := day.Add(time.Hour)

			// The 09:00 run hangs in its platform call; the daemon is killed.
			for k := range tc.kills {
				stuck := &stuckOut{entered: make(chan struct{}), release: make(chan struct{})}
				killed, err := NewJobs(Options{Store: r.store, Jobs: r.jobs, Location: time.UTC, Out: stuck, Now: r.clk.Now})
				if err != nil {
					t.Fatal(err)
				}
				at := nine.Add(time.Duration(k) * time.Minute)
				r.clk.Set(at)
				done := make(chan struct{})
				go func() { _ = killed.Tick(context.Background(), at); close(done) }()
				select {
				case <-stuck.entered:
				case <-done:
					t.Fatalf("kill %d: the run at %s was not started, so it could not be killed", k+1, at.Format("15:04"))
				}
				r.restart()
				close(stuck.release) // the dead process's writes go nowhere
				<-done
			}

			r.build()
			restart := nine.Add(tc.restartAt)
			r.tick(restart)
			r.tick(restart.Add(time.Minute))
			r.tick(restart.Add(2 * time.Minute)) // a resumed run is not resumed again
			if got := len(r.out.Sent()); got != tc.delivered {
				t.Fatalf("the 09:00 reminder was delivered %d times after the restart, want %d", got, tc.delivered)
			}
			runs, err := r.store.ListRuns(context.Background(), "standup", 0)
			if err != nil {
				t.Fatal(err)
			}
			var interrupted int
			for _, run := range runs {
				if run.Status == RunRunning {
					t.Errorf("run %d (scheduled %s) still shows running after the restart", run.ID, run.Scheduled)
				}
				if strings.Contains(run.Error, "interrupted") {
					interrupted++
				}
			}
			if interrupted != tc.kills {
				t.Errorf("runs %+v: want the %d killed run(s) recorded as interrupted", runs, tc.kills)
			}
			// The next day runs as usual, once.
			r.tick(nine.AddDate(0, 0, 1))
			if got := len(r.out.Sent()); got != tc.delivered+1 {
				t.Fatalf("after the next day's 09:00: %d deliveries, want %d", got, tc.delivered+1)
			}
		})
	}
}
