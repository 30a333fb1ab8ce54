// Package testkit holds what the platform fakes share (waiting on a fake's
// changes, a self-signed loopback certificate); the fakes themselves live in
// its subpackages: fakellm (OpenAI-compatible servers and their flavors),
// faketranscribe (audio transcription and speech), faketelegram, fakeslack,
// fakediscord, fakematrix, fakewhatsapp, fakesmtp, fakesearch; real servers
// run by dovecottest (IMAP) and pgtest (PostgreSQL); browser drives
// headless Chromium.
package testkit

import (
	"testing"
	"time"
)

// WaitUntil re-checks a condition each time a fake's state changes until it
// holds, failing t after timeout. check reports whether the condition holds
// and returns the channel that is closed at the fake's next change. poll > 0
// also re-checks at that interval, for conditions that depend on state
// outside the fake (a client's readiness).
func WaitUntil(t testing.TB, timeout, poll time.Duration, what string, check func() (bool, <-chan struct{})) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var tick <-chan time.Time
	if poll > 0 {
		tk := time.NewTicker(poll)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		ok, changed := check()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-tick:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
			return
		}
	}
}
