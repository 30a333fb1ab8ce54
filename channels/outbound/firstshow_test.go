package outbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
)

// manualTimers is Options.After for tests: every wait the streamer starts is
// announced on asked, and ends only when the test fires it.
type manualTimers struct {
	asked chan timerReq
}

type timerReq struct {
	d    time.Duration
	fire chan time.Time
}

func newManualTimers() *manualTimers { return &manualTimers{asked: make(chan timerReq, 16)} }

func (m *manualTimers) after(d time.Duration) <-chan time.Time {
	r := timerReq{d: d, fire: make(chan time.Time, 1)}
	m.asked <- r
	return r.fire
}

func (m *manualTimers) next(t *testing.T) timerReq {
	t.Helper()
	select {
	case r := <-m.asked:
		return r
	case <-time.After(wait):
		t.Fatal("the streamer never waited")
		return timerReq{}
	}
}

// An answer that is complete before its first draft is due is sent once:
// no draft message in a group (edits), no preview in a private chat — one
// Bot API call instead of two or three for a quick answer. A slow answer
// still shows its draft once the delay has passed.
func TestQuickAnswerHasNoDraft(t *testing.T) {
	const answer = "A quick answer, complete before its first draft was due."
	for _, tc := range []struct {
		name    string
		preview bool
		slow    bool // the first-show delay passes before the turn ends
	}{
		{name: "edits, quick"},
		{name: "previews, quick", preview: true},
		{name: "edits, slow", slow: true},
		{name: "previews, slow", preview: true, slow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := console.NewMemory("memory", 4000, time.Second) // Telegram's edit interval
			var ch channels.Channel = mem
			pv := &previewChannel{Memory: mem, shown: make(chan struct{}, 1)}
			if tc.preview {
				ch = pv
			}
			timers := newManualTimers()
			out := outbound.New(openStore(t), outbound.Options{After: timers.after})
			d := outbound.Delivery{Target: channels.Target{Channel: "memory", ChatID: "c1"}, TurnID: "in-1"}
			st, ok := out.Stream(ctx, ch, d)
			if !ok {
				t.Fatal("Stream refused an editing channel")
			}
			st.Append(answer)
			first := timers.next(t)
			if first.d != outbound.StreamFirstShow {
				t.Fatalf("first draft waits %v, want %v", first.d, outbound.StreamFirstShow)
			}
			if tc.slow {
				first.fire <- time.Now()
				if tc.preview {
					select {
					case <-pv.shown:
					case <-time.After(wait):
						t.Fatal("no preview once the delay passed")
					}
				} else {
					mem.WaitSent(t, "memory:c1", 1, wait)
				}
			}
			st.Stop()
			d.Markdown = answer
			if _, err := out.Deliver(ctx, ch, d); err != nil {
				t.Fatal(err)
			}
			sent := mem.Sent("")
			wantEdits, wantPreviews := 0, 0 // a draft showing the whole answer needs no edit
			if tc.slow && tc.preview {
				wantPreviews = 1
			}
			if len(sent) != 1 || sent[0].Text != answer || sent[0].Edits != wantEdits {
				t.Fatalf("chat shows %+v; want the answer once, edited %d time(s)", sent, wantEdits)
			}
			if got := pv.shownPreviews(); len(got) != wantPreviews {
				t.Fatalf("previews %q, want %d", got, wantPreviews)
			}
		})
	}
}

// The first draft is due after StreamFirstShow or the channel's edit
// interval, whichever is shorter (the console streams every 150 ms).
func TestFirstShowNoLaterThanTheEditInterval(t *testing.T) {
	mem := console.NewMemory("memory", 4000, 100*time.Millisecond)
	timers := newManualTimers()
	out := outbound.New(openStore(t), outbound.Options{After: timers.after})
	st, _ := out.Stream(context.Background(), mem, outbound.Delivery{Target: channels.Target{Channel: "memory", ChatID: "c1"}, TurnID: "in-1"})
	defer st.Stop()
	st.Append("Some text long enough to be shown as a draft.")
	if got := timers.next(t).d; got != 100*time.Millisecond {
		t.Fatalf("first draft waits %v, want the edit interval 100ms", got)
	}
}

// A turn whose first words ("Let me look that up…") were discarded by a tool
// call before they were shown starts over: the answer after the tool call
// waits its own StreamFirstShow, so an answer complete at once after the
// tool call is sent once, with no draft or preview flashing before it.
func TestAnswerAfterAToolCallWaitsItsOwnFirstShow(t *testing.T) {
	const answer = "The answer after the tool call, complete at once."
	for _, preview := range []bool{false, true} {
		t.Run(map[bool]string{false: "edits", true: "previews"}[preview], func(t *testing.T) {
			ctx := context.Background()
			mem := console.NewMemory("memory", 4000, time.Second)
			var ch channels.Channel = mem
			pv := &previewChannel{Memory: mem, shown: make(chan struct{}, 1)}
			if preview {
				ch = pv
			}
			timers := newManualTimers()
			out := outbound.New(openStore(t), outbound.Options{After: timers.after})
			d := outbound.Delivery{Target: channels.Target{Channel: "memory", ChatID: "c1"}, TurnID: "in-1"}
			st, _ := out.Stream(ctx, ch, d)
			st.Append("Let me look that up for you right now.")
			first := timers.next(t)
			st.Reset() // a tool call: the remark is discarded, never shown
			first.fire <- time.Now()
			st.Append(answer)
			if got := timers.next(t).d; got != outbound.StreamFirstShow {
				t.Fatalf("the answer after the tool call is shown after %v, want its own %v", got, outbound.StreamFirstShow)
			}
			st.Stop() // the answer is complete before its first show
			d.Markdown = answer
			if _, err := out.Deliver(ctx, ch, d); err != nil {
				t.Fatal(err)
			}
			if sent := mem.Sent(""); len(sent) != 1 || sent[0].Text != answer || sent[0].Edits != 0 {
				t.Fatalf("chat shows %+v; want the answer once, never edited", sent)
			}
			if got := pv.shownPreviews(); len(got) != 0 {
				t.Fatalf("previews %q before a quick answer", got)
			}
		})
	}
}
