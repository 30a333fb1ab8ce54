package heartbeat

import (
	"fmt"
	"testing"
	"time"
)

// A job at a fixed local time runs once on both DST days, like cron does:
// on spring-forward day a time in the skipped hour (02:30 in Berlin) runs
// when the hour is skipped (03:00 CEST) instead of not at all, and on
// fall-back day the repeated hour does not run it a second time. Jobs with
// a wildcard hour keep following real time (an hourly job runs 23 and 25
// times).
func TestFixedTimeJobsRunOnceOnDSTDays(t *testing.T) {
	be := mustLoc(t, "Europe/Berlin")
	jobs := []JobSpec{
		{Name: "at-0230", Schedule: "30 2 * * *", Timezone: "Europe/Berlin", Kind: KindReminder, Text: "at-0230", DeliverTo: []string{"telegram:1"}},
		{Name: "at-0200", Schedule: "0 2 * * *", Timezone: "Europe/Berlin", Kind: KindReminder, Text: "at-0200", DeliverTo: []string{"telegram:1"}},
		{Name: "at-0130", Schedule: "30 1 * * *", Timezone: "Europe/Berlin", Kind: KindReminder, Text: "at-0130", DeliverTo: []string{"telegram:1"}},
		{Name: "hourly", Schedule: "0 * * * *", Timezone: "Europe/Berlin", Kind: KindReminder, Text: "hourly", DeliverTo: []string{"telegram:1"}},
	}
	for _, tc := range []struct {
		name  string
		day   time.Time
		want  map[string][]string // job → local delivery times on day
		hours int                 // deliveries of the hourly job on day
	}{
		{"spring forward", time.Date(2025, 3, 30, 0, 0, 0, 0, be), map[string][]string{
			"at-0230": {"03:00 CEST"}, "at-0200": {"03:00 CEST"}, "at-0130": {"01:30 CET"}}, 23},
		{"fall back", time.Date(2025, 10, 26, 0, 0, 0, 0, be), map[string][]string{
			"at-0230": {"02:30 CEST"}, "at-0200": {"02:00 CEST"}, "at-0130": {"01:30 CEST"}}, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := tc.day.Add(-12 * time.Hour)
			r := newJobsRig(t, start, time.UTC, jobs...)
			end := tc.day.AddDate(0, 0, 1).Add(12 * time.Hour)
			for now := start; !now.After(end); now = now.Add(time.Minute) {
				r.tick(now)
			}
			got := map[string][]string{}
			hourly := 0
			for _, d := range r.out.Sent() {
				at := d.At.In(be)
				if at.Year() != tc.day.Year() || at.YearDay() != tc.day.YearDay() {
					continue
				}
				if d.Text == "hourly" {
					hourly++
					continue
				}
				got[d.Text] = append(got[d.Text], at.Format("15:04 MST"))
			}
			for job, want := range tc.want {
				if fmt.Sprint(got[job]) != fmt.Sprint(want) {
					t.Errorf("%s on %s: delivered at %v, want %v", job, tc.day.Format("2006-01-02"), got[job], want)
				}
			}
			if hourly != tc.hours {
				t.Errorf("hourly job on %s: %d deliveries, want %d", tc.day.Format("2006-01-02"), hourly, tc.hours)
			}
		})
	}
}
