package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// TestKillMidSendIsTheOnlyDuplicate (issue 27, break 7) kills the daemon, on
// a machine kept busy by a CPU hog, at the worst moments for Telegram's
// private chats: while answers stream (previews on screen) and, aimed, while
// a sendMessage is in flight — Telegram has created the message, its answer
// has not reached the daemon. What the user sees is counted on the fake
// platform, not taken from the daemon:
//   - every answer arrives complete; no fragment of a killed run's answer
//     stays in any chat (previews are ephemeral, nothing was edited);
//   - every answer seen twice is one the daemon counted as a resend
//     (WARN "resending a chunk … may show it twice", and
//     switchboard_deliveries_total{outcome="resent"}), and every aimed kill
//     produced exactly that: one counted resend, no more.
func TestKillMidSendIsTheOnlyDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts and kills the daemon binary")
	}
	cpuHog(t)
	// Enough answers that the five kills land while the chats still talk.
	const msgs = 6
	chats := []int{0, 3, 6, 9} // Telegram private chats
	model := loadtest.ModelOptions{Responder: func(req *fakellm.Request) fakellm.Response {
		text := req.LastUserText()
		tok := text
		if i := strings.LastIndex(text, "q"); i >= 0 {
			tok = strings.Fields(text[i:])[0]
		}
		return fakellm.Response{Content: streamedAnswer(tok), ChunkSize: 12, ChunkDelay: 20 * time.Millisecond}
	}}
	r := newRig(t, model, loadtest.ConfigOptions{LogLevel: "info"})
	r.start()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Kills: mid-stream (a preview shown), then aimed at a send in flight;
	// the last one aimed, so the last daemon's metric shows its resend.
	aims := []bool{false, true, false, true, true}
	caught := 0
	kctx, kcancel := context.WithCancel(ctx) // ends the killer once the talk is over
	defer kcancel()
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		ctx := kctx
		for _, aimed := range aims {
			if !aimed {
				if !r.waitWriting(ctx, chats, msgs) {
					return
				}
				r.current().Kill()
				r.start()
				continue
			}
			c := r.p.TelegramTap.CatchNextCreate()
			select {
			case <-c.Arrived:
			case <-ctx.Done():
				c.Release()
				return
			}
			r.current().Kill()
			c.Release()
			caught++
			r.start()
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.talk(ctx, chats, msgs)
	}()
	<-done
	kcancel() // a kill still waiting for a send has nothing left to catch
	<-killerDone
	tally := r.settleStreams(ctx, chats, msgs)

	out := r.output()
	resends := strings.Count(out, "resending a chunk")
	repeats := r.p.Repeats()
	t.Logf("%d kills (%d aimed at a send in flight) over %d streamed answers; %d counted resends; platform repeats %v; previews shown %d",
		len(aims), caught, len(chats)*msgs, resends, repeats, r.previews(chats))
	for _, tok := range tally.lost {
		t.Errorf("answer to %s never shown complete", tok)
	}
	if len(tally.fragments) > 0 {
		t.Errorf("fragments in private chats (previews leave none): %v", tally.fragments)
	}
	if len(tally.doubled) > resends || len(repeats) > resends {
		t.Errorf("doubled answers %v (platform repeats %v) but only %d counted resends", tally.doubled, repeats, resends)
	}
	if caught < 3 {
		t.Fatalf("only %d of 3 aimed kills caught a send in flight: the test proves nothing", caught)
	}
	if resends < caught {
		t.Errorf("%d aimed kills caught a landed send without its receipt, but only %d resends were counted:\n%s", caught, resends, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "resending a chunk") && !strings.Contains(line, "target=telegram:") {
			t.Errorf("a resend that does not name the chat: %s", line)
		}
	}
	if got := r.metric("switchboard_deliveries_total", `outcome="resent"`); got < 1 {
		t.Errorf("the last daemon resent the aimed chunk but switchboard_deliveries_total{outcome=\"resent\"} = %v", got)
	}
}

// talk sends msgs messages in each chat, the next once the previous answer
// is shown complete (noted as progress), or given up (reported by the
// tally) when nothing progressed for eventWait: no answer completed in any
// chat, no daemon became ready.
func (r *rig) talk(ctx context.Context, chats []int, msgs int) {
	done := make(chan struct{}, len(chats))
	r.prog.note() // the talk starts a fresh wait
	for _, c := range chats {
		go func() {
			defer func() { done <- struct{}{} }()
			for seq := range msgs {
				tok := loadtest.Token(c, seq)
				r.p.Say(c, tok)
				if r.untilProgress(ctx, func() bool { return slicesContains(r.chatMessages(c), streamedAnswer(tok)) }) {
					r.prog.note()
				}
			}
		}()
	}
	for range chats {
		<-done
	}
}

// settleStreams waits, once the talk is over, while the last run finishes
// what it replays (answers still complete, drafts still get replaced) until
// every answer is shown and every extra message is one a counted resend
// explains, or nothing progressed for eventWait; it tallies the chats.
func (r *rig) settleStreams(ctx context.Context, chats []int, msgs int) streamTally {
	var tally streamTally
	left := -1
	r.prog.note()
	r.untilProgress(ctx, func() bool {
		tally = r.tallyStreams(chats, msgs)
		if n := len(tally.lost) + len(tally.fragments); left < 0 || n < left {
			left = n
			r.prog.note()
		}
		resends := strings.Count(r.output(), "resending a chunk")
		return len(tally.lost) == 0 && len(tally.doubled)+len(tally.fragments) <= resends
	})
	return tally
}

// waitWriting waits until one of the chats shows an answer being written:
// a new preview, or an incomplete message (streaming by edits); false when
// ctx ends first.
func (r *rig) waitWriting(ctx context.Context, chats []int, msgs int) bool {
	before := r.previews(chats)
	for ctx.Err() == nil {
		if r.previews(chats) > before || r.draftShown(chats, msgs) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// previews counts the sendMessageDraft previews shown in the chats.
func (r *rig) previews(chats []int) int {
	n := 0
	for _, c := range chats {
		n += len(r.p.Telegram.Drafts(loadtest.TelegramChatID(c)))
	}
	return n
}
