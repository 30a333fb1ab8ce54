package web

import (
	"context"
	"errors"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
)

type refusing struct{}

func (refusing) Handle(context.Context, channels.Message) error { return errors.New("store down") }

// The operator's own messages are kept (Posts) once the handler accepted
// them, apart from the bot's History and not published to live views; a
// message the handler refused is not kept.
func TestPostsKeepsTheOperatorsAcceptedMessages(t *testing.T) {
	a := New(Options{MaxHistory: 2})
	running(t, a, &recorder{})
	events, cancel := a.Subscribe("c1")
	defer cancel()
	for _, text := range []string{"one", "two", "three"} {
		if _, err := a.Post(context.Background(), "c1", "operator", text); err != nil {
			t.Fatal(err)
		}
	}
	got := a.Posts("c1")
	if len(got) != 2 || got[0].Text != "two" || got[1].Text != "three" || got[1].From != "operator" || got[1].Kind != KindPost {
		t.Fatalf("Posts = %+v, want the last two, from operator", got)
	}
	if h := a.History("c1"); len(h) != 0 {
		t.Errorf("the operator's messages are in the bot's History: %+v", h)
	}
	select {
	case ev := <-events:
		t.Errorf("a post was published to a live view: %+v", ev)
	default:
	}

	b := New(Options{})
	running(t, b, refusing{})
	if _, err := b.Post(context.Background(), "c2", "operator", "lost?"); err == nil {
		t.Fatal("a refused message was accepted")
	}
	if p := b.Posts("c2"); len(p) != 0 {
		t.Errorf("a refused message is kept as shown: %+v", p)
	}
}
