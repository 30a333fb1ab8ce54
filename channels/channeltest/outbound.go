package channeltest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// The behaviours of answers going out. Each answers a user who spoke first,
// as the bot does.

// rateLimitPeriod is the retry_after the platform asks for in
// testRateLimit: longer than any adapter waits out by itself.
const rateLimitPeriod = 7 * time.Second

// testLongAnswer: Format splits a long answer under the adapter's limit,
// each code block closed in the chunk that opens it, nothing lost or
// repeated, in order; the platform accepts every chunk.
func (s suite) testLongAnswer(t *testing.T, r *rig) {
	m := r.converse(t, r.drv.DirectTarget(), "tell me everything")
	md, markers := longAnswer(s.caps)
	chunks := r.ch.Format(md)
	if len(chunks) < 2 {
		t.Fatalf("Format returned %d chunk(s) for an answer of %d characters with a limit of %d", len(chunks), len(md), s.caps.MaxChunk)
	}
	for _, p := range chunkProblems(s.caps, chunks, markers) {
		t.Error(p)
	}
	for i, c := range chunks {
		_, err := r.ch.Send(r.ctx, channels.Outgoing{Target: m.Target(), Text: c.Text, Plain: c.Plain, Nonce: r.nonce()})
		if err != nil {
			t.Fatalf("the platform refused chunk %d of %d (%d characters): %v", i+1, len(chunks), len([]rune(c.Text)), err)
		}
	}
	if sent := r.waitSent(t, m.Target(), len(chunks)); len(sent) != len(chunks) {
		t.Errorf("the platform shows %d bot messages for %d chunks", len(sent), len(chunks))
	}
}

// testStreaming: where the platform edits messages (Editor), a draft sent
// and edited twice is one message reading the last text; where the adapter
// shows deltas (DeltaWriter), the answer sent after them is shown once.
func (s suite) testStreaming(t *testing.T, r *rig) {
	ed, isEditor := r.ch.(channels.Editor)
	dw, isDelta := r.ch.(channels.DeltaWriter)
	if !isEditor && !isDelta {
		t.Fatal("the adapter is neither a channels.Editor nor a channels.DeltaWriter: implement one, or name this behaviour in Capabilities.NotApplicable with the reason")
	}
	m := r.converse(t, r.drv.DirectTarget(), "stream me an answer")
	target := m.Target()
	shown := 0
	if isEditor {
		if ed.EditInterval() <= 0 {
			t.Errorf("EditInterval() = %s, want a positive pause between edits", ed.EditInterval())
		}
		id := r.send(t, target, "Thinking")
		const final = "Thinking about it: the answer is 42."
		for _, text := range []string{"Thinking about it", final} {
			c := r.ch.Format(text)
			if err := ed.Edit(r.ctx, target, id, c[0].Text); err != nil {
				t.Fatalf("Edit(%q) of message %q: %v", text, id, err)
			}
		}
		shown++
		r.expectSent(t, target, fmt.Sprintf("one message reading %q", final), func(sent []string) bool {
			return len(sent) == shown && strings.Contains(sent[shown-1], final)
		})
	}
	if isDelta {
		const final = "The answer is 43."
		dw.WriteDelta(target, "The answer ")
		dw.WriteDelta(target, "is 43.")
		r.send(t, target, final)
		shown++
		sent := r.expectSent(t, target, fmt.Sprintf("one more message reading %q", final), func(sent []string) bool {
			return len(sent) >= shown && strings.Contains(sent[shown-1], final)
		})
		if len(sent) != shown || strings.Count(sent[shown-1], "43") != 1 {
			t.Errorf("after streaming deltas and sending the answer the platform shows %q: want the answer once", sent)
		}
	}
}

// testTyping: StartTyping shows typing (refreshed while on where it
// expires), stop takes it down or stops refreshing, a second stop is
// harmless, and typing shows again when started again.
func (s suite) testTyping(t *testing.T, r *rig) {
	ty, ok := r.ch.(channels.Typer)
	if !ok {
		t.Fatal("the adapter is no channels.Typer: implement it, or name this behaviour in Capabilities.NotApplicable with the reason")
	}
	td := need[TypingDriver](t, r.drv, "TypingDriver")
	target := td.TypingTarget(t)
	expires := s.caps.TypingExpires
	showing := func(tg channels.Target, min int) func() bool {
		return func() bool {
			n, on := td.Typing(tg)
			return n >= min && (expires || on)
		}
	}
	off := func() bool { _, on := td.Typing(target); return !on }

	stop := ty.StartTyping(r.ctx, target)
	td.WaitFor(t, "typing to show", showing(target, 1))
	if expires {
		td.WaitFor(t, "typing to be refreshed (the platform drops it after a few seconds)", showing(target, 2))
	}
	stopWithin(t, stop)
	stopWithin(t, stop) // idempotent
	after, _ := td.Typing(target)
	if expires {
		// No event shows that something does not happen; the refreshes of
		// a second indicator are the clock: two of them after stop
		// returned, the first indicator would have refreshed too.
		control := td.TypingTarget(t)
		if control == target {
			t.Fatal("TypingTarget returned the same chat twice; each call must prepare a new one")
		}
		stopControl := ty.StartTyping(r.ctx, control)
		td.WaitFor(t, "two refreshes of a second typing indicator", showing(control, 3))
		stopWithin(t, stopControl)
	} else {
		td.WaitFor(t, "typing to be taken down after stop", off)
	}
	if n, _ := td.Typing(target); n != after {
		t.Errorf("typing was signalled %d more time(s) after stop returned", n-after)
	}

	stop = ty.StartTyping(r.ctx, target)
	td.WaitFor(t, "typing to show again after a second StartTyping", showing(target, after+1))
	stopWithin(t, stop)
	if !expires {
		td.WaitFor(t, "the second typing indicator to be taken down", off)
	}
}

// stopWithin calls stop and fails t if it does not return in time.
func stopWithin(t *testing.T, stop func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		stop()
	}()
	select {
	case <-done:
	case <-time.After(Timeout):
		t.Fatalf("typing's stop did not return within %s", Timeout)
	}
}

// testRateLimit: a send the platform answers with its rate limit fails as
// channels.RateLimited with the platform's retry_after, and posts nothing.
func (s suite) testRateLimit(t *testing.T, r *rig) {
	rl := need[RateLimitDriver](t, r.drv, "RateLimitDriver")
	m := r.converse(t, rl.DirectTarget(), "answer me, even when busy")
	rl.RateLimitNextSend(t, rateLimitPeriod)
	c := r.ch.Format("this answer meets a rate limit")
	_, err := r.ch.Send(r.ctx, channels.Outgoing{Target: m.Target(), Text: c[0].Text, Plain: c[0].Plain, Nonce: r.nonce()})
	if err == nil {
		t.Fatal("Send succeeded although the platform answered with its rate limit")
	}
	kind, after := channels.ClassifyError(err)
	if kind != channels.KindRateLimited || after != rateLimitPeriod {
		t.Errorf("Send's error is %s with retry after %s, want %s with %s (the platform's retry_after): %v",
			kind, after, channels.KindRateLimited, rateLimitPeriod, err)
	}
	if sent := r.drv.Sent(m.Target()); len(sent) != 0 {
		t.Errorf("the platform shows %q although it refused the message", sent)
	}
}

// expectSent waits until ok holds for the bot's messages in target and
// returns them; on timeout the failure shows what the platform shows.
func (r *rig) expectSent(t *testing.T, target channels.Target, what string, ok func([]string) bool) []string {
	t.Helper()
	var got []string
	r.drv.WaitFor(annotated{TB: t, note: func() string { return fmt.Sprintf("the platform shows %q", r.drv.Sent(target)) }},
		what, func() bool {
			got = r.drv.Sent(target)
			return ok(got)
		})
	return got
}

// annotated adds a note to a driver's failure.
type annotated struct {
	testing.TB
	note func() string
}

func (a annotated) Fatalf(format string, args ...any) {
	a.TB.Helper()
	a.TB.Fatalf(format+"; %s", append(args, a.note())...)
}

func (a annotated) Fatal(args ...any) {
	a.TB.Helper()
	a.TB.Fatal(append(args, "; "+a.note())...)
}
