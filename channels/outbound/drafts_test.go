package outbound_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

func openStore(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A streamed draft whose send has no receipt (killed during the platform
// call) but did land is found by its recorded text and edited into the
// answer: no second message.
func TestUnconfirmedDraftIsEditedIntoTheAnswer(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	target := channels.Target{Channel: "memory", ChatID: "c1"}
	ch := &verifyingChannel{Memory: console.NewMemory("memory", 4000, 0), landed: map[string]string{}}
	id, err := ch.Send(ctx, channels.Outgoing{Target: target, Text: "The answer starts like"})
	if err != nil {
		t.Fatal(err)
	}
	ch.landed["The answer starts like"] = id
	if _, err := st.OutboxIntent(ctx, memory.OutboxRecord{Target: target.String(), TurnID: "in-1", Chunk: 0,
		Text: "The answer starts like", Status: memory.OutboxPending}); err != nil {
		t.Fatal(err)
	}
	out := outbound.New(st, outbound.Options{})
	ids, err := out.Deliver(ctx, ch, outbound.Delivery{Target: target, TurnID: "in-1", Markdown: "The answer starts like this and ends here."})
	if err != nil || len(ids) != 1 || ids[0] != id {
		t.Fatalf("Deliver = %v, %v; want the draft %s", ids, err, id)
	}
	sent := ch.Sent("")
	if len(sent) != 1 || sent[0].Text != "The answer starts like this and ends here." || sent[0].Edits != 1 {
		t.Fatalf("chat shows %+v; want the draft edited into the answer, once", sent)
	}
	if out.Stats().Resent != 0 {
		t.Errorf("counted %d resends, want 0", out.Stats().Resent)
	}
}

// Records of the turn in another chat (the chat migrated) are not taken for
// this chat's drafts.
func TestDraftsOfAnotherTargetAreNotEdited(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	old := channels.Target{Channel: "memory", ChatID: "old"}
	moved := channels.Target{Channel: "memory", ChatID: "new"}
	ch := console.NewMemory("memory", 4000, 0)
	out := outbound.New(st, outbound.Options{})
	if _, err := out.Deliver(ctx, ch, outbound.Delivery{Target: old, TurnID: "in-1", Markdown: "draft in the old chat"}); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Deliver(ctx, ch, outbound.Delivery{Target: moved, TurnID: "in-1", Markdown: "the answer"}); err != nil {
		t.Fatal(err)
	}
	if got := ch.Sent(old.String()); len(got) != 1 || got[0].Text != "draft in the old chat" {
		t.Errorf("old chat shows %+v, want its message untouched", got)
	}
	if got := ch.Sent(moved.String()); len(got) != 1 || got[0].Text != "the answer" {
		t.Errorf("new chat shows %+v, want the answer", got)
	}
}

// Deliver caps every answer at MaxChunks messages; the last one of a cut
// answer ends with the note, an answer that fits is untouched.
func TestDeliverCapsLongAnswers(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 400) // ~10800 chars, 11 chunks of 1000
	fits := strings.Repeat("x", 2500)                          // 3 chunks
	tests := []struct {
		name      string
		max       int
		text      string
		wantCount int
		truncated bool
	}{
		{"one chunk", 1, long, 1, true},
		{"three chunks", 3, long, 3, true},
		{"fits exactly", 3, fits, 3, false},
		{"default cap", 0, strings.Repeat("word ", 4000), outbound.DefaultMaxChunks, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := console.NewMemory("memory", 1000, 0)
			out := outbound.New(nil, outbound.Options{MaxChunks: tc.max})
			target := channels.Target{Channel: "memory", ChatID: "c"}
			if _, err := out.Deliver(context.Background(), ch, outbound.Delivery{Target: target, Markdown: tc.text}); err != nil {
				t.Fatal(err)
			}
			sent := ch.Sent("")
			if len(sent) != tc.wantCount {
				t.Fatalf("%d messages, want %d", len(sent), tc.wantCount)
			}
			last := sent[len(sent)-1].Text
			if got := strings.HasSuffix(last, outbound.TruncatedNote); got != tc.truncated {
				t.Errorf("last message ends with the note: %v, want %v (…%q)", got, tc.truncated, last[max(0, len(last)-60):])
			}
			var all strings.Builder
			for _, s := range sent {
				all.WriteString(s.Text)
			}
			if n := strings.Count(all.String(), outbound.TruncatedNote); tc.truncated && n != 1 {
				t.Errorf("the note appears %d times, want once", n)
			}
		})
	}
}
