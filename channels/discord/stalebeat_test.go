package discord

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

// discordgo's heartbeat goroutine of a dropped connection can call
// Session.Close once more, late: it waited for the lock the first Close
// holds for a second, then its heartbeat failed. Resumed on a new connection
// by then, that Close sent the new one a 1000 close frame, Discord ended the
// session, and the adapter had to IDENTIFY again (a CI run caught it as
// TestResumeAfterDropDeliversGapOnce timing out). The test plays that late
// Close 50 ms after the disconnect, once per drop; the adapter must resume
// every time.
func TestLateCloseOfADroppedConnectionDoesNotEndTheResumedSession(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		late int
		wg   sync.WaitGroup
	)
	h := start(t, fakediscord.Options{}, func(o *Options) {
		o.gatewayHook = func(s *discordgo.Session) {
			s.AddHandler(func(s *discordgo.Session, _ *discordgo.Disconnect) {
				mu.Lock()
				defer mu.Unlock()
				if late >= 3 {
					return // the late Close's own disconnect, or the test's end
				}
				late++
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(50 * time.Millisecond)
					_ = s.Close() // what the stale heartbeat goroutine does
				}()
			})
		}
	})
	defer func() {
		if t.Failed() {
			t.Logf("resumes %+v\nlogs:\n%s", h.fake.Resumes(), h.logs.String())
		}
	}()
	m1 := h.fake.UserSays(dmID, userID, "before", fakediscord.SayOptions{})
	h.sink.wait(t, 1)
	const drops = 3
	for i := range drops {
		h.fake.DropConnection()
		h.fake.WaitResumes(t, i+1, wait)
		waitReady(t, h)
	}
	wg.Wait()
	m2 := h.fake.UserSays(dmID, userID, "after", fakediscord.SayOptions{})
	if got := h.sink.wait(t, 2); !slices.Equal(ids(got), []string{m1.ID, m2.ID}) {
		t.Fatalf("delivered %v, want %v", ids(got), []string{m1.ID, m2.ID})
	}
	if n := len(h.fake.Identifies()); n != 1 {
		t.Errorf("IDENTIFY sent %d times over %d drops; each should have resumed", n, drops)
	}
	for _, rs := range h.fake.Resumes() {
		if !rs.Accepted {
			t.Errorf("a RESUME was refused: %+v (the session was ended by a late close)", rs)
		}
	}
}
