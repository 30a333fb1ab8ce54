package fakeslack

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// WaitFor waits until cond holds, re-checking it (without the server's lock,
// so it may call the server) at each state change and every 20ms, failing t
// after timeout.
func (s *Server) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, timeout, 20*time.Millisecond, "fakeslack: "+what, func() (bool, <-chan struct{}) {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		return cond(), ch
	})
}
