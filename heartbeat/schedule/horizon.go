package schedule

import (
	"fmt"
	"time"
)

// MaxOneShotYears bounds how far ahead a one-shot job (the schedule tool's
// at or in, the web console's at, config.yaml's jobs[].at) may be set.
// Five years admits every real long-range reminder (passport, licence,
// certificate and warranty renewals run one to five years) and refuses
// what is a typo or nonsense (the year 2205 for 2025, the year 9999), which
// would otherwise hold one of a chat's job slots for ever and sit near the
// ends of time.Duration (about 292 years) and of JSON time (year 9999).
const MaxOneShotYears = 5

// OneShotLimit is the latest time a one-shot job set at now may run.
func OneShotLimit(now time.Time) time.Time { return now.AddDate(MaxOneShotYears, 0, 0) }

// CheckOneShot refuses an at time more than MaxOneShotYears after now. The
// error reads "<at> is more than 5 years ahead: a one-shot job may be at
// most 5 years in the future (until <limit>)", the limit in at's zone.
func CheckOneShot(at, now time.Time) error {
	if limit := OneShotLimit(now); at.After(limit) {
		return fmt.Errorf("%s is more than %d years ahead: %s", at.Format(time.RFC3339), MaxOneShotYears, horizonRule(limit.In(at.Location())))
	}
	return nil
}

// CheckOneShotIn refuses a delay d from now beyond MaxOneShotYears; what
// is the delay as the user wrote it.
func CheckOneShotIn(what string, d time.Duration, now time.Time, loc *time.Location) error {
	if limit := OneShotLimit(now); d > limit.Sub(now) {
		return fmt.Errorf("%q is more than %d years ahead: %s", truncate(what, 60), MaxOneShotYears, horizonRule(limit.In(loc)))
	}
	return nil
}

func horizonRule(limit time.Time) string {
	return fmt.Sprintf("a one-shot job may be at most %d years in the future (until %s)", MaxOneShotYears, limit.Format("2006-01-02 15:04 MST"))
}
