package ui

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/switchboard-bot/switchboard/memory"
)

// The overview's "Last turns" from the store (issue 34): the turns this
// process ran come from Stats (with their traces); the ones that ended
// before it began are read from the store once, at the first overview
// (newest sessions first, until no older session can hold a newer turn),
// so after a restart the table still shows the last turns instead of
// "No turns yet.". A failed read is logged and tried again next time.

// earlierTurns caches the newest turns of before this process.
type earlierTurns struct {
	mu    sync.Mutex
	done  bool
	turns []TurnTrace // newest first, at most recentTurns
}

// recentTurnsOf is the overview's last n turns, newest first: this
// process's and, behind them, the earlier ones the store holds.
func (s *Server) recentTurnsOf(ctx context.Context, n int) []TurnTrace {
	out := s.o.Stats.RecentTurns(n)
	seen := make(map[string]bool, len(out))
	for _, t := range out {
		seen[t.ID] = true
	}
	for _, t := range s.earlier(ctx) {
		if !seen[t.ID] {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// earlier reads, once, the newest recentTurns turns the store holds that
// ended before Stats began.
func (s *Server) earlier(ctx context.Context) []TurnTrace {
	e := &s.earlierTurns
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return e.turns
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backfillTimeout)
	defer cancel()
	st := s.o.Backend.Store()
	sessions, err := st.ListSessions(ctx)
	if err != nil {
		s.log.Warn("the overview's last turns show this process's only", "err", err)
		return nil
	}
	sort.SliceStable(sessions, func(i, j int) bool { return sessions[i].Updated.After(sessions[j].Updated) })
	began := s.o.Stats.Began()
	var out []TurnTrace
	for _, m := range sessions {
		// A session's turns ended no later than its last update.
		if len(out) >= recentTurns && m.Updated.Before(out[len(out)-1].At) {
			break
		}
		turns, err := st.SessionTurns(ctx, m.Key)
		if err != nil {
			s.log.Warn("the overview's last turns show this process's only", "session", m.Key, "err", err)
			return nil
		}
		channel, _, _ := strings.Cut(m.Key, ":")
		for _, t := range turns {
			if t.Ended.IsZero() || !t.Ended.Before(began) {
				continue
			}
			out = append(out, storedTrace(t, channel))
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
		if len(out) > recentTurns {
			out = out[:recentTurns]
		}
	}
	e.turns, e.done = out, true
	return out
}

// storedTrace is a stored turn as the overview's table shows it (the trace
// itself is not stored).
func storedTrace(t memory.Turn, channel string) TurnTrace {
	return TurnTrace{ID: t.ID, At: t.Ended, Channel: channel, Finish: t.FinishReason,
		Duration: max(t.Ended.Sub(t.Started), 0), Models: t.Models}
}
