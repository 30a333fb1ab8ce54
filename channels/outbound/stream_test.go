package outbound_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// wait bounds every wait for something the test caused: a hang
// detector, not a performance bound (milliseconds on a quiet machine,
// seconds on a loaded one).
const wait = time.Minute

// previewChannel is a Memory channel that can show previews (as Telegram's
// private chats can): every preview is recorded, and unsupported makes
// Preview answer ErrNoPreviews (an older server).
type previewChannel struct {
	*console.Memory
	unsupported bool
	mu          sync.Mutex
	previews    []string
	shown       chan struct{} // a preview or a refusal happened
}

func (p *previewChannel) Previews(channels.Target) bool { return true }

func (p *previewChannel) Preview(_ context.Context, _ channels.Target, id int64, text string) error {
	defer func() {
		select {
		case p.shown <- struct{}{}:
		default:
		}
	}()
	if id == 0 {
		panic("preview id 0")
	}
	if p.unsupported {
		return channels.ErrNoPreviews
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.previews = append(p.previews, text)
	return nil
}

func (p *previewChannel) shownPreviews() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.previews...)
}

// Streaming then delivering: where the channel edits, the draft becomes the
// answer (one message); where it previews, nothing stays in the chat until
// the answer is sent once; a server without previews falls back to edits.
func TestStreamThenDeliver(t *testing.T) {
	const (
		draft  = "The answer starts like this"
		answer = "The answer starts like this and ends here."
	)
	for _, tc := range []struct {
		name         string
		preview      bool
		unsupported  bool
		wantQuiet    bool
		wantPreviews bool
		wantEdits    int
	}{
		{name: "edits", wantEdits: 1},
		{name: "previews", preview: true, wantQuiet: true, wantPreviews: true},
		{name: "previews unsupported", preview: true, unsupported: true, wantEdits: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := console.NewMemory("memory", 4000, time.Millisecond)
			var ch channels.Channel = mem
			pv := &previewChannel{Memory: mem, unsupported: tc.unsupported, shown: make(chan struct{}, 1)}
			if tc.preview {
				ch = pv
			}
			out := outbound.New(openStore(t), outbound.Options{})
			target := channels.Target{Channel: "memory", ChatID: "c1"}
			d := outbound.Delivery{Target: target, TurnID: "in-1"}
			st, ok := out.Stream(ctx, ch, d)
			if !ok {
				t.Fatal("Stream refused an editing channel")
			}
			st.Append(draft)
			if tc.preview {
				select {
				case <-pv.shown:
				case <-time.After(wait):
					t.Fatal("no preview shown")
				}
			}
			if !tc.preview || tc.unsupported {
				mem.WaitSent(t, "memory:c1", 1, wait)
			}
			st.Stop()
			if st.Quiet() != tc.wantQuiet {
				t.Errorf("Quiet() = %v, want %v", st.Quiet(), tc.wantQuiet)
			}
			if got := pv.shownPreviews(); (len(got) > 0) != tc.wantPreviews || tc.wantPreviews && got[0] != draft {
				t.Errorf("previews %q; want some: %v", got, tc.wantPreviews)
			}
			d.Markdown = answer
			if _, err := out.Deliver(ctx, ch, d); err != nil {
				t.Fatal(err)
			}
			sent := mem.Sent("")
			if len(sent) != 1 || sent[0].Text != answer || sent[0].Edits != tc.wantEdits {
				t.Fatalf("chat shows %+v; want the answer once, edited %d time(s)", sent, tc.wantEdits)
			}
		})
	}
}

// A turn run again after a crash whose earlier run left a draft send without
// a receipt, on a platform that cannot be asked whether it arrived: the draft
// is sent again, counted as a resend and logged at WARN (the chaos tests count
// that line) — never silently.
func TestStreamResendOfAnUnconfirmedDraftIsCounted(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	target := channels.Target{Channel: "memory", ChatID: "c1"}
	if _, err := st.OutboxIntent(ctx, memory.OutboxRecord{Target: target.String(), TurnID: "in-1", Chunk: 0,
		Text: "The answer starts", Status: memory.OutboxPending}); err != nil {
		t.Fatal(err)
	}
	logs := &syncLog{}
	obs := &countingObserver{outcomes: map[string]int{}}
	out := outbound.New(st, outbound.Options{Observer: obs,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	ch := console.NewMemory("memory", 4000, time.Millisecond)
	s, _ := out.Stream(ctx, ch, outbound.Delivery{Target: target, TurnID: "in-1"})
	s.Append("The answer starts again, streamed")
	ch.WaitSent(t, "memory:c1", 1, wait)
	s.Stop()
	if s.Quiet() {
		t.Error("Quiet() after a draft was sent")
	}
	if got := out.Stats().Resent; got != 1 || obs.outcomes["resent"] != 1 {
		t.Errorf("resends counted %d (metric %d), want 1", got, obs.outcomes["resent"])
	}
	var warn string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "resending a chunk whose earlier send has no receipt") {
			warn = l
		}
	}
	if !strings.Contains(warn, "target=memory:c1") || !strings.Contains(warn, "kind=draft") {
		t.Errorf("no WARN line naming the chat and the draft:\n%s", logs.String())
	}
}

// A channel that cannot edit is not streamed to.
func TestStreamNeedsAnEditor(t *testing.T) {
	out := outbound.New(nil, outbound.Options{})
	if _, ok := out.Stream(context.Background(), &pacedChannel{events: new([]string)}, outbound.Delivery{}); ok {
		t.Fatal("Stream accepted a channel without edits")
	}
}
