package web

import (
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
)

// What the bot sends while its typing indicator is on is the running turn's
// draft: Live in the events and in History until the indicator goes off, so
// a console that opens mid-turn can show it apart from finished messages.
func TestDraftsAreLiveWhileTheTurnRuns(t *testing.T) {
	a := New(Options{})
	ctx := context.Background()
	events, cancel := a.Subscribe("c1")
	defer cancel()

	if a.Typing("c1") {
		t.Fatal("Typing before any turn")
	}
	stop := a.StartTyping(ctx, web("c1"))
	if ev := next(t, events); ev.Kind != KindTyping || ev.Text != TypingOn {
		t.Fatalf("event = %+v, want typing on", ev)
	}
	if !a.Typing("c1") || a.Typing("c2") {
		t.Fatalf("Typing c1=%v c2=%v, want only c1", a.Typing("c1"), a.Typing("c2"))
	}
	id, err := a.Send(ctx, channels.Outgoing{Target: web("c1"), Text: "It is"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.Kind != KindMessage || !ev.Live {
		t.Fatalf("draft event = %+v, want a Live message", ev)
	}
	if err := a.Edit(ctx, web("c1"), id, "It is noon"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.Kind != KindEdit || !ev.Live || ev.Text != "It is noon" {
		t.Fatalf("draft edit = %+v, want a Live edit", ev)
	}
	if h := a.History("c1"); len(h) != 1 || !h[0].Live || h[0].Text != "It is noon" {
		t.Fatalf("History mid-turn = %+v, want the draft, Live", h)
	}

	stop()
	if ev := next(t, events); ev.Kind != KindTyping || ev.Text != TypingOff {
		t.Fatalf("event = %+v, want typing off", ev)
	}
	if a.Typing("c1") {
		t.Fatal("Typing after the turn")
	}
	if h := a.History("c1"); len(h) != 1 || h[0].Live {
		t.Fatalf("History after the turn = %+v, want the message, no longer Live", h)
	}
	// The final delivery edits the draft after the indicator went off.
	if err := a.Edit(ctx, web("c1"), id, "It is **noon**"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.Kind != KindEdit || ev.Live {
		t.Fatalf("final edit = %+v, want an edit that is not Live", ev)
	}
	if _, err := a.Send(ctx, channels.Outgoing{Target: web("c1"), Text: "/status: fine"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.Kind != KindMessage || ev.Live {
		t.Fatalf("message outside a turn = %+v, want it not Live", ev)
	}
}

// A view that lags behind must still see "typing off" after the drafts it
// ends, never before them (it would take them for finished messages), and
// nested indicators go off with the last one.
func TestTypingOffNeverOvertakesTheDrafts(t *testing.T) {
	a := New(Options{})
	ctx := context.Background()
	events, cancel := a.Subscribe("c1")
	defer cancel()

	// Nothing is read until the turn is over: the queue holds it all.
	if _, err := a.Send(ctx, channels.Outgoing{Target: web("c1"), Text: "earlier"}); err != nil {
		t.Fatal(err)
	}
	stopOuter := a.StartTyping(ctx, web("c1"))
	stopInner := a.StartTyping(ctx, web("c1"))
	id, err := a.Send(ctx, channels.Outgoing{Target: web("c1"), Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, web("c1"), id, "draft grown"); err != nil {
		t.Fatal(err)
	}
	stopInner()
	if !a.Typing("c1") {
		t.Fatal("the outer indicator went off with the inner one")
	}
	stopOuter()

	var got []Event
	for len(got) == 0 || got[len(got)-1].Kind != KindTyping || got[len(got)-1].Text != TypingOff {
		got = append(got, next(t, events))
	}
	draftAt, offAt := -1, len(got)-1
	for i, ev := range got {
		if ev.ID == id && ev.Text == "draft grown" && ev.Live {
			draftAt = i
		}
		if ev.Kind == KindTyping && ev.Text == TypingOff && i != offAt {
			t.Fatalf("typing off came early: %+v", got)
		}
	}
	if draftAt < 0 || draftAt > offAt {
		t.Fatalf("events %+v: want the grown draft, Live, before typing off", got)
	}
}
