package config

import (
	"strings"
	"testing"
	"time"
)

// Issue 27: a config one-shot for the year 9999 is refused at validate with
// file:line, like the schedule tool refuses it in chat; one within
// schedule.MaxOneShotYears is accepted.
func TestJobAtTooFarAhead(t *testing.T) {
	job := func(at string) string {
		return "jobs:\n  - name: j\n    kind: reminder\n    text: renew the passport\n    at: " + at + "\n    deliver_to: [telegram:1]\n"
	}
	got := parseErr(t, job("9999-12-31T09:00:00Z"), emptyEnv)
	if want := "config.yaml:5: jobs[0].at: 9999-12-31T09:00:00Z is more than 5 years ahead: a one-shot job may be at most 5 years in the future (until "; !strings.Contains(got, want) {
		t.Fatalf("error:\n  %s\nwant it to contain:\n  %s", got, want)
	}
	soon := time.Now().AddDate(4, 11, 0).UTC().Format(time.RFC3339)
	c := mustParse(t, job(soon), emptyEnv)
	if at, ok := c.Jobs[0].AtTime(); !ok || at.Format(time.RFC3339) != soon {
		t.Fatalf("at = %v, %v; want %s", at, ok, soon)
	}
}
