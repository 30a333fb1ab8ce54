package heartbeat

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
)

// oneShot is a cron.Schedule that fires once, at At.
type oneShot struct{ At time.Time }

// Next returns At if it is after t, else the zero time (cron: never again).
func (o oneShot) Next(t time.Time) time.Time {
	if t.Before(o.At) {
		return o.At
	}
	return time.Time{}
}

// parseSchedule returns the schedule of a spec in loc: cron (5 fields,
// optional seconds, descriptors, @every) or a one-shot time.
func parseSchedule(spec JobSpec, loc *time.Location) (cron.Schedule, error) {
	if !spec.At.IsZero() {
		return oneShot{At: spec.At}, nil
	}
	if strings.TrimSpace(spec.Schedule) == "" {
		return nil, fmt.Errorf("job %s has neither a schedule nor an at time", spec.Name)
	}
	return schedule.Parse(spec.Schedule, loc)
}

// maxScan bounds the occurrences enumerated one by one.
const maxScan = 2000

// occurrences counts the scheduled times in (after, now] and returns the
// latest of them (zero if none). After a long downtime with a frequent
// schedule it jumps ahead instead of walking every occurrence; the count is
// then a lower bound.
func occurrences(s cron.Schedule, after, now time.Time) (latest time.Time, n int) {
	cur := after
	for {
		next := s.Next(cur)
		if next.IsZero() || next.After(now) {
			return latest, n
		}
		n++
		gap := next.Sub(cur)
		latest, cur = next, next
		if n > maxScan {
			// Jump close to now, keeping two periods of margin.
			if gap <= 0 {
				gap = time.Hour
			}
			if j := now.Add(-2 * gap); j.After(cur) {
				cur = j
			}
		}
	}
}

var (
	inUnitRe = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w)\b`)
)

// parseIn reads a relative time such as "20m", "2h30m", "1 day", "90 minutes",
// "in 3 hours".
// A delay too large for time.Duration is returned as the largest one.
func parseIn(s string) (time.Duration, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	t = strings.TrimPrefix(t, "in ")
	t = strings.ReplaceAll(t, " and ", " ")
	t = strings.ReplaceAll(t, ",", " ")
	if d, err := time.ParseDuration(strings.ReplaceAll(t, " ", "")); err == nil {
		if d <= 0 {
			return 0, fmt.Errorf("%q is not in the future", s)
		}
		return d, nil
	}
	ms := inUnitRe.FindAllStringSubmatchIndex(t, -1)
	if len(ms) == 0 {
		return 0, fmt.Errorf("%q is not a duration such as 20m, 2h30m or 1 day", s)
	}
	var total float64 // nanoseconds; a time.Duration sum could wrap around
	rest := t
	for _, m := range ms {
		v, _ := strconv.ParseFloat(t[m[2]:m[3]], 64)
		var unit time.Duration
		switch u := t[m[4]:m[5]]; {
		case strings.HasPrefix(u, "s"):
			unit = time.Second
		case strings.HasPrefix(u, "mi") || u == "m":
			unit = time.Minute
		case strings.HasPrefix(u, "h"):
			unit = time.Hour
		case strings.HasPrefix(u, "d"):
			unit = 24 * time.Hour
		case strings.HasPrefix(u, "w"):
			unit = 7 * 24 * time.Hour
		}
		total += v * float64(unit)
		rest = strings.Replace(rest, t[m[0]:m[1]], "", 1)
	}
	if strings.TrimSpace(rest) != "" || total <= 0 {
		return 0, fmt.Errorf("%q is not a duration such as 20m, 2h30m or 1 day", s)
	}
	if total >= math.MaxInt64 {
		return math.MaxInt64, nil // saturated: the caller's bound refuses it
	}
	return time.Duration(total), nil
}

// parseAt reads an absolute time: RFC 3339, or a local "2006-01-02 15:04"
// (also with T, with seconds) in loc.
func parseAt(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time such as 2025-01-31T09:00:00+01:00 or 2025-01-31 09:00", s)
}

// loadLocation resolves a timezone name ("" = fallback).
func loadLocation(name string, fallback *time.Location) (*time.Location, error) {
	switch name {
	case "":
		return fallback, nil
	case "Local":
		return time.Local, nil
	case "UTC":
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (use an IANA name such as Europe/Berlin)", name)
	}
	return loc, nil
}
