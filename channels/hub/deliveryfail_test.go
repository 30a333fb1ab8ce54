package hub_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// Issue 13 defect 13: a failed delivery is visible. The Outbound's side (the
// WARN line, the counters) is tested in channels/outbound; here, /status.

// The /status text shows the last failed delivery.
func TestStatusShowsLastFailedDelivery(t *testing.T) {
	r := newRig(t, fakellm.Start(t, fakellm.Echo()), openAccess())
	r.ch.FailNext(channels.Permanent(errors.New("platform refused: chat is read-only")))
	r.say("c1", "u1", "hello")
	deadline := time.Now().Add(wait)
	for !strings.Contains(r.h.StatusText(context.Background()), "last failed delivery") {
		if time.Now().After(deadline) {
			t.Fatalf("status never showed the failed delivery:\n%s", r.h.StatusText(context.Background()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	text := r.h.StatusText(context.Background())
	if !strings.Contains(text, "1 failed") || !strings.Contains(text, "platform refused: chat is read-only") || !strings.Contains(text, "memory:c1") {
		t.Errorf("status does not show the failed delivery:\n%s", text)
	}
}
