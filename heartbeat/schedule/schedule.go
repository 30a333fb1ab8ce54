// Package schedule parses the time expressions of the heartbeat and of jobs:
// cron specs (five fields, optional leading seconds, descriptors, @every),
// "HH:MM-HH:MM" active-hours windows, and holds the one default that both
// the scheduler and the configuration need (DefaultGrace). It imports
// nothing of the project, so internal/config validates config.yaml with the
// very parsers the heartbeat runs, without compiling the heartbeat.
package schedule

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// DefaultGrace is how late a job's run may start and still be on time when
// the job sets no grace (jobs[].grace).
const DefaultGrace = 5 * time.Minute

var (
	hourMinRe  = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])$`)
	cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
)

// Parse parses a cron spec the way the scheduler runs it: five fields
// (minute hour day-of-month month day-of-week) with an optional leading
// seconds field, or a descriptor (@hourly, @daily, @every 30m), in loc
// (nil = time.Local). Time zones come from the timezone keys, so TZ=
// prefixes are refused. A spec with fixed hours runs once per matching
// local date across DST changes (see dstSchedule).
func Parse(spec string, loc *time.Location) (sched cron.Schedule, err error) {
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, fmt.Errorf("cron spec %q: set the time zone with the timezone key, not a TZ= prefix", truncate(spec, 60))
	}
	if loc == nil {
		loc = time.Local
	}
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid cron spec %q", truncate(spec, 60))
		}
	}()
	sched, err = cronParser.Parse("CRON_TZ=" + loc.String() + " " + spec)
	if err != nil {
		return nil, fmt.Errorf("invalid cron spec %q: %v (use 5 fields \"min hour dom month dow\", optional leading seconds, or @every 30m / @daily)", truncate(spec, 60), err)
	}
	if s, ok := sched.(*cron.SpecSchedule); ok && s.Hour&starBit == 0 {
		return dstSchedule{s}, nil
	}
	return sched, nil
}

// starBit is robfig/cron's mark of a field given as "*".
const starBit = 1 << 63

// dstSchedule runs a spec with fixed hours once per matching local date
// across DST changes, as cron does: a time the spring-forward gap skips
// (02:30 in Europe/Berlin) runs at the end of the gap (03:00), and a time
// the fall-back repeats runs only at its first pass. Specs whose hour field
// is "*" follow real time and are not wrapped (an hourly job runs 23 and 25
// times on those days).
type dstSchedule struct{ s *cron.SpecSchedule }

// Next returns the first run after t.
func (d dstSchedule) Next(t time.Time) time.Time {
	n := d.s.Next(t)
	for !n.IsZero() && repeatedWall(n.In(d.s.Location)) {
		n = d.s.Next(n)
	}
	if g := d.gapRun(t, n); !g.IsZero() {
		return g
	}
	return n
}

// repeatedWall reports whether n's local wall time already occurred once,
// before a fall-back transition.
func repeatedWall(n time.Time) bool {
	start, _ := n.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, off := n.Zone()
	_, prev := start.Add(-time.Nanosecond).Zone()
	return prev > off && n.Sub(start) < time.Duration(prev-off)*time.Second
}

// gapRun returns the end of the first spring-forward gap after t and not
// after n (n zero: within a year) in which the spec has a wall time, or the
// zero time.
func (d dstSchedule) gapRun(t, n time.Time) time.Time {
	cur := t.In(d.s.Location)
	limit := n
	if limit.IsZero() {
		limit = t.AddDate(1, 0, 0)
	}
	for {
		_, end := cur.ZoneBounds()
		if end.IsZero() || end.After(limit) {
			return time.Time{}
		}
		_, before := end.Add(-time.Nanosecond).Zone()
		_, after := end.Zone()
		if after > before {
			// The gap's wall times continue the old offset from end on.
			old := *d.s
			old.Location = time.FixedZone("", before)
			if m := old.Next(end.Add(-time.Nanosecond)); !m.IsZero() && m.Before(end.Add(time.Duration(after-before)*time.Second)) {
				return end
			}
		}
		cur = end
	}
}

// ParseActiveHours parses "HH:MM-HH:MM" into minutes since midnight. The
// window may cross midnight (start > end, e.g. "22:00-06:00"); equal start
// and end are refused as ambiguous.
func ParseActiveHours(s string) (start, end int, err error) {
	a, b, ok := strings.Cut(s, "-")
	ma, mb := hourMinRe.FindStringSubmatch(strings.TrimSpace(a)), hourMinRe.FindStringSubmatch(strings.TrimSpace(b))
	if !ok || ma == nil || mb == nil {
		return 0, 0, fmt.Errorf("%q must be HH:MM-HH:MM in 24-hour time, e.g. 09:00-21:00", truncate(s, 60))
	}
	h1, _ := strconv.Atoi(ma[1])
	m1, _ := strconv.Atoi(ma[2])
	h2, _ := strconv.Atoi(mb[1])
	m2, _ := strconv.Atoi(mb[2])
	start, end = h1*60+m1, h2*60+m2
	if start == end {
		return 0, 0, fmt.Errorf("%q: start and end are equal; leave active_hours empty for all day", s)
	}
	return start, end, nil
}

// InActiveHours reports whether minute-of-day m (0..1439) lies in the
// window [start, end), which may cross midnight.
func InActiveHours(start, end, m int) bool {
	if start < end {
		return m >= start && m < end
	}
	return m >= start || m < end
}

// truncate shortens s to n runes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
