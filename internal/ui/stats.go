package ui

import (
	"slices"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// Stats is the console's picture of recent activity, fed as a hub Observer:
// per-minute buckets of turns, errors and latency over the last day, the last
// event per channel, and the traces of the last turns by turn id. The turns
// of the day before this process began come from the store (Backfill, once),
// so the charts survive a restart. Safe for concurrent use.
type Stats struct {
	now     func() time.Time
	started time.Time // turns that ended before are an earlier process's

	fillMu sync.Mutex // held while the store is read for Backfill
	filled bool       // under fillMu

	mu      sync.Mutex
	buckets *[bucketCount]bucket // nil until the first turn (64 KB an idle daemon does without)
	last    map[string]time.Time // channel → last inbound message
	traces  map[string]TurnTrace // turn id → trace
	order   []string             // turn ids, oldest first (bounded by maxTraces)
}

// bucketCount is a day of minutes.
const bucketCount = 24 * 60

// maxTraces bounds the traces kept for the chat and session pages.
const maxTraces = 512

type bucket struct {
	minute  int64 // unix minute the bucket holds; other values are stale
	turns   int
	errors  int
	latency time.Duration // sum
	maxLat  time.Duration
}

// TurnTrace is a finished turn's trace as the agent reported it.
type TurnTrace struct {
	ID       string
	At       time.Time // when it finished
	Channel  string
	Finish   string
	Duration time.Duration
	Entries  []agent.TraceEntry
	// Models are the models that answered the turn's calls, in order of
	// first use (more than one after a failover).
	Models []memory.ModelUsage
}

// NewStats returns empty stats; now may be nil (time.Now).
func NewStats(now func() time.Time) *Stats {
	if now == nil {
		now = time.Now
	}
	return &Stats{now: now, started: now(), last: map[string]time.Time{}, traces: map[string]TurnTrace{}}
}

// Backfill adds to the charts, once, the turns of the last day that ended
// before these stats began (an earlier process's, which the hub never
// reported here): load lists the turns the store holds, at least those of
// the last day. A load that fails is tried again at the next call.
func (s *Stats) Backfill(load func(since time.Time) ([]memory.Turn, error)) error {
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	if s.filled {
		return nil
	}
	now := s.now()
	since := now.Add(-bucketCount * time.Minute)
	turns, err := load(since)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range turns {
		if t.Ended.IsZero() || t.Ended.Before(since) || !t.Ended.Before(s.started) {
			continue
		}
		s.addLocked(t.Ended, t.Ended.Sub(t.Started), t.FinishReason == string(agent.FinishAPIError))
	}
	s.filled = true
	return nil
}

// addLocked counts a turn that ended at with latency d in its minute.
func (s *Stats) addLocked(at time.Time, d time.Duration, failed bool) {
	if s.buckets == nil {
		s.buckets = new([bucketCount]bucket)
	}
	m := at.Unix() / 60
	b := &s.buckets[m%bucketCount]
	if b.minute != m {
		if b.minute > m {
			return // the slot holds a later minute already
		}
		*b = bucket{minute: m}
	}
	b.turns++
	if failed {
		b.errors++
	}
	d = max(d, 0)
	b.latency += d
	b.maxLat = max(b.maxLat, d)
}

// MessageIn records an inbound message of channel.
func (s *Stats) MessageIn(channel string) {
	s.mu.Lock()
	s.last[channel] = s.now()
	s.mu.Unlock()
}

// MessageDropped is part of the hub's Observer; the console does not chart drops.
func (s *Stats) MessageDropped(string, string) {}

// TurnDone records a finished turn.
func (s *Stats) TurnDone(channel string, res agent.Result, err error, d time.Duration) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLocked(now, d, err != nil)
	if res.TurnID == "" {
		return
	}
	finish := string(res.FinishReason)
	if err != nil {
		finish = "error"
	}
	if _, ok := s.traces[res.TurnID]; !ok {
		s.order = append(s.order, res.TurnID)
	}
	// The turn's own trace, not a copy: the agent never changes it after the
	// turn; clipped, so an append elsewhere cannot write into it.
	s.traces[res.TurnID] = TurnTrace{ID: res.TurnID, At: now, Channel: channel, Finish: finish, Duration: d,
		Entries: slices.Clip(res.Trace), Models: slices.Clip(res.Models)}
	for len(s.order) > maxTraces {
		delete(s.traces, s.order[0])
		s.order = s.order[1:]
	}
}

// Began is when these stats began: turns that ended before are an earlier
// process's.
func (s *Stats) Began() time.Time { return s.started }

// RecentTurns returns the last n finished turns of this process, newest
// first (the overview's "which model answered").
func (s *Stats) RecentTurns(n int) []TurnTrace {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TurnTrace
	for i := len(s.order) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, s.traces[s.order[i]])
	}
	return out
}

// Trace returns the trace of turn id, if this process ran it recently.
func (s *Stats) Trace(id string) (TurnTrace, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.traces[id]
	return t, ok
}

// LastEvent is when channel last received a message (zero if never).
func (s *Stats) LastEvent(channel string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[channel]
}

// Point is one chart bucket.
type Point struct {
	Start   time.Time
	Turns   int
	Errors  int
	AvgLat  time.Duration
	MaxLat  time.Duration
	latency time.Duration
}

// Series returns n points of width minutes each, oldest first, ending with
// the current minute.
func (s *Stats) Series(n, width int) []Point {
	nowMin := s.now().Unix() / 60
	first := nowMin - int64(n*width) + 1
	out := make([]Point, n)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out {
		start := first + int64(i*width)
		p := Point{Start: time.Unix(start*60, 0)}
		for m := start; m < start+int64(width) && s.buckets != nil; m++ {
			b := s.buckets[((m%bucketCount)+bucketCount)%bucketCount]
			if b.minute != m || m > nowMin {
				continue
			}
			p.Turns += b.turns
			p.Errors += b.errors
			p.latency += b.latency
			p.MaxLat = max(p.MaxLat, b.maxLat)
		}
		if p.Turns > 0 {
			p.AvgLat = p.latency / time.Duration(p.Turns)
		}
		out[i] = p
	}
	return out
}

// TurnsLastMinutes is the number of turns finished in the last n minutes
// (the current one included).
func (s *Stats) TurnsLastMinutes(n int) int {
	total := 0
	for _, p := range s.Series(n, 1) {
		total += p.Turns
	}
	return total
}
