package agent

import (
	"errors"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// llm.max_retries: 0 reaches the agent as a negative MaxRetries ("none"):
// a failing endpoint is asked once, the primary and every fallback alike,
// so the chat fails over (or gets its error) without waiting out retries
// the operator turned off.
func TestNoRetriesMeansOneAttempt(t *testing.T) {
	down := fakellm.Reply(fakellm.Response{Status: 503})
	r := newFailoverRig(t, down, down, func(o *Options) { o.MaxRetries = -1 })
	_, err := r.turn(t, "hello", nil)
	var me *ModelError
	if !errors.As(err, &me) || me.Kind != KindUnavailable {
		t.Fatalf("turn error = %v, want the fallback's 503", err)
	}
	if p, f := r.srv.RequestCount(), r.fb.RequestCount(); p != 1 || f != 1 || me.Attempts != 1 {
		t.Fatalf("requests: primary %d, fallback %d, attempts %d; want 1, 1, 1 (no retries)", p, f, me.Attempts)
	}
}
