package web

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// wait bounds every wait for something the test caused: a hang
// detector, not a performance bound (milliseconds on a quiet machine,
// seconds on a loaded one).
const wait = time.Minute

// recorder is a sink that keeps what it was handed.
type recorder struct {
	mu   sync.Mutex
	msgs []channels.Message
	err  error
}

func (r *recorder) Handle(_ context.Context, m channels.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.msgs = append(r.msgs, m)
	return nil
}

func (r *recorder) got() []channels.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Message(nil), r.msgs...)
}

// running starts a's Run with sink and waits until Post works; Run ends
// when the test does.
func running(t *testing.T, a *Adapter, sink channels.Sink) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	deadline := time.Now().Add(wait)
	for !a.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the adapter did not become ready")
		}
		time.Sleep(time.Millisecond)
	}
}

func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the subscription closed")
		}
		return ev
	case <-time.After(wait):
		t.Fatal("no event")
	}
	return Event{}
}

func web(conv string) channels.Target { return channels.Target{Channel: Name, ChatID: conv} }

func TestPostHandsANormalizedMessageToTheHandler(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	a := New(Options{Now: func() time.Time { return now }})
	rec := &recorder{}
	running(t, a, rec)

	id1, err := a.Post(context.Background(), "chat-1", "alice", "hello <b>there</b>")
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	id2, err := a.Post(context.Background(), "chat-1", "", "again")
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	got := rec.got()
	if len(got) != 2 {
		t.Fatalf("handler got %d messages, want 2", len(got))
	}
	m := got[0]
	want := channels.Message{Channel: "web", ChatID: "chat-1", MessageID: id1, Direct: true,
		Sender: channels.Sender{ID: "alice", Name: "alice"}, Text: "hello <b>there</b>", Time: now}
	if m.Channel != want.Channel || m.ChatID != want.ChatID || m.MessageID != want.MessageID || !m.Direct ||
		m.Sender != want.Sender || m.Text != want.Text || !m.Time.Equal(now) || m.Mentioned || m.FromSelf {
		t.Fatalf("message = %+v, want %+v", m, want)
	}
	if m.Target().String() != "web:chat-1" || m.UserKey() != "web:user:alice" {
		t.Errorf("session key %q, user key %q", m.Target(), m.UserKey())
	}
	if got[1].Sender.ID != DefaultUser || id1 == id2 {
		t.Errorf("second message: sender %q, ids %q %q", got[1].Sender.ID, id1, id2)
	}
	// The operator is never gated, whatever the access mode.
	for _, mode := range []string{channels.AccessPairing, channels.AccessAllowlist} {
		p := channels.AccessPolicy{Mode: mode}
		if d := p.Decide(&m, false); d != channels.Allow || !p.IsAdmin(&m) {
			t.Errorf("mode %s: decision %s, admin %v; want allow and admin", mode, d, p.IsAdmin(&m))
		}
	}
}

func TestPostWaitsForTheChannelToStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(Options{StartWait: time.Minute})
		rec := &recorder{}
		posted := make(chan error, 1)
		go func() {
			_, err := a.Post(context.Background(), "c", "", "early")
			posted <- err
		}()
		synctest.Wait() // Post is waiting for Run
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, rec) }()
		if err := <-posted; err != nil {
			t.Fatalf("Post while the channel started: %v", err)
		}
		if got := rec.got(); len(got) != 1 || got[0].Text != "early" {
			t.Fatalf("handler got %+v", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// Stopped while waiting: Post gives up at once.
		go func() {
			_, err := a.Post(context.Background(), "c", "", "late")
			posted <- err
		}()
		synctest.Wait()
		a.Stop()
		if err := <-posted; !errors.Is(err, ErrStopped) {
			t.Fatalf("Post waiting across Stop: %v", err)
		}
	})
}

func TestMessageIDsAreUniqueAcrossRestarts(t *testing.T) {
	t1 := time.Unix(1000, 0)
	a := New(Options{Now: func() time.Time { return t1 }})
	b := New(Options{Now: func() time.Time { return t1.Add(time.Nanosecond) }})
	if a.nextID() == b.nextID() {
		t.Fatal("two processes issued the same first message id")
	}
}

func TestPostRefuses(t *testing.T) {
	refused := errors.New("disk full")
	tests := []struct {
		name, conv, user, text string
		sinkErr                error
		notRunning, stopped    bool
		want                   string // part of the error
		wantIs                 error
	}{
		{name: "empty conversation", conv: "", text: "hi", want: "conversation id"},
		{name: "colon in conversation", conv: "a:b", text: "hi", want: "may only have"},
		{name: "long conversation", conv: strings.Repeat("x", 65), text: "hi", want: "1-64"},
		{name: "blank text", conv: "c", text: " \n ", want: "empty message"},
		{name: "invalid utf-8", conv: "c", text: "\xff", want: "UTF-8"},
		{name: "colon in user", conv: "c", user: "a:b", text: "hi", want: "user name"},
		{name: "not running", conv: "c", text: "hi", notRunning: true, wantIs: ErrNotRunning},
		{name: "stopped", conv: "c", text: "hi", stopped: true, wantIs: ErrStopped},
		{name: "handler refuses", conv: "c", text: "hi", sinkErr: refused, wantIs: refused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Options{StartWait: 20 * time.Millisecond})
			rec := &recorder{err: tc.sinkErr}
			if !tc.notRunning {
				running(t, a, rec)
			}
			if tc.stopped {
				a.Stop()
			}
			_, err := a.Post(context.Background(), tc.conv, tc.user, tc.text)
			if err == nil {
				t.Fatal("Post succeeded")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("err = %v, want %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if len(rec.got()) != 0 {
				t.Fatal("the handler got a refused message")
			}
		})
	}
}

func TestSubscribersSeeWhatTheBotDoes(t *testing.T) {
	a := New(Options{})
	ctx := context.Background()
	events, cancel := a.Subscribe("c1")
	defer cancel()
	other, cancelOther := a.Subscribe("c2")
	defer cancelOther()

	expect := func(w Event) {
		t.Helper()
		ev := next(t, events)
		if ev.Kind != w.Kind || ev.ID != w.ID || ev.Text != w.Text || ev.Time.IsZero() {
			t.Fatalf("event = %+v, want %+v", ev, w)
		}
	}
	stop := a.StartTyping(ctx, web("c1"))
	expect(Event{Kind: KindTyping, Text: TypingOn})
	a.WriteDelta(web("c1"), "Hel")
	a.WriteDelta(web("c1"), "lo")
	expect(Event{Kind: KindDelta, Text: "Hel"})
	expect(Event{Kind: KindDelta, Text: "lo"})
	a.ResetDelta(web("c1"))
	expect(Event{Kind: KindReset})
	id, err := a.Send(ctx, channels.Outgoing{Target: web("c1"), Text: "Hello"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	expect(Event{Kind: KindMessage, ID: id, Text: "Hello"})
	if err := a.Edit(ctx, web("c1"), id, "Hello, world"); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	expect(Event{Kind: KindEdit, ID: id, Text: "Hello, world"})
	stop()
	stop() // idempotent: one "off"
	expect(Event{Kind: KindTyping, Text: TypingOff})
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	case ev := <-other:
		t.Fatalf("another conversation got %+v", ev)
	case <-time.After(20 * time.Millisecond):
	}
	h := a.History("c1")
	if len(h) != 1 || h[0].Kind != KindMessage || h[0].ID != id || h[0].Text != "Hello, world" {
		t.Fatalf("History = %+v, want the message with its edited text", h)
	}
	if a.History("c2") != nil {
		t.Fatal("History of a quiet conversation is not empty")
	}
}

func TestSendAndEditRefuse(t *testing.T) {
	a := New(Options{})
	ctx := context.Background()
	id, err := a.Send(ctx, channels.Outgoing{Target: web("c"), Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func() error
	}{
		{"send to a bad conversation", func() error {
			_, err := a.Send(ctx, channels.Outgoing{Target: web("a b"), Text: "x"})
			return err
		}},
		{"send empty", func() error { _, err := a.Send(ctx, channels.Outgoing{Target: web("c"), Text: " "}); return err }},
		{"edit an id of another process", func() error { return a.Edit(ctx, web("c"), "zzz-1", "y") }},
		{"edit an id not issued yet", func() error { return a.Edit(ctx, web("c"), a.epoch+"-99", "y") }},
		{"edit empty", func() error { return a.Edit(ctx, web("c"), id, "") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if kind, _ := channels.ClassifyError(err); err == nil || kind != channels.KindPermanent {
				t.Fatalf("err = %v, want a permanent error", err)
			}
		})
	}
}

func TestHistoryIsBounded(t *testing.T) {
	a := New(Options{MaxHistory: 3, MaxConversations: 2})
	ctx := context.Background()
	send := func(conv, text string) string {
		t.Helper()
		id, err := a.Send(ctx, channels.Outgoing{Target: web(conv), Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, s := range []string{"1", "2", "3", "4", "5"} {
		send("a", s)
	}
	if got := texts(a.History("a")); got != "3 4 5" {
		t.Fatalf("History(a) = %q, want the newest 3", got)
	}
	send("b", "b1")
	send("a", "6") // a is now the most recently active
	send("c", "c1")
	if a.History("b") != nil {
		t.Fatalf("the least recently active conversation was kept: %v", a.History("b"))
	}
	if texts(a.History("a")) != "4 5 6" || texts(a.History("c")) != "c1" {
		t.Fatalf("History a=%q c=%q", texts(a.History("a")), texts(a.History("c")))
	}
	// A message that aged out can still be edited (live views show it).
	old := a.epoch + "-1"
	if err := a.Edit(ctx, web("a"), old, "edited"); err != nil {
		t.Fatalf("Edit of an aged-out message: %v", err)
	}
}

func texts(evs []Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Text)
	}
	return strings.Join(out, " ")
}

func TestSlowSubscriberDropsDeltasNeverMessages(t *testing.T) {
	a := New(Options{QueueSize: 4})
	ctx := context.Background()
	events, cancel := a.Subscribe("c")
	defer cancel()
	// Nobody reads: the pump holds one event, the queue fills.
	var ids []string
	for i := 0; i < 8; i++ {
		a.WriteDelta(web("c"), "d")
	}
	for i := 0; i < 6; i++ {
		id, err := a.Send(ctx, channels.Outgoing{Target: web("c"), Text: "m" + string(rune('0'+i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		for j := 0; j < 5; j++ { // a burst of edits collapses into one
			if err := a.Edit(ctx, web("c"), id, "e"+string(rune('0'+i))); err != nil {
				t.Fatal(err)
			}
		}
		a.WriteDelta(web("c"), "lost") // the queue is over its size: dropped
	}
	var msgs, deltas int
	final := map[string]string{}
	for msgs < len(ids) || len(final) < len(ids) {
		ev := next(t, events)
		switch ev.Kind {
		case KindDelta:
			deltas++
			if ev.Text == "lost" {
				t.Fatal("a delta queued past the queue size was delivered")
			}
		case KindMessage:
			msgs++
			final[ev.ID] = ev.Text
		case KindEdit:
			final[ev.ID] = ev.Text
		}
	}
	if deltas > 4 {
		t.Errorf("%d deltas delivered, want at most the queue size 4", deltas)
	}
	for i, id := range ids {
		if want := "e" + string(rune('0'+i)); final[id] != want {
			t.Errorf("message %s shows %q, want %q", id, final[id], want)
		}
	}
}

func TestHopelesslySlowSubscriberIsClosed(t *testing.T) {
	a := New(Options{QueueSize: 2})
	events, cancel := a.Subscribe("c")
	defer cancel()
	for i := 0; i < 20; i++ {
		if _, err := a.Send(context.Background(), channels.Outgoing{Target: web("c"), Text: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for range events { // the channel closes: the view must reload History
		n++
	}
	if n >= 20 {
		t.Fatalf("got all %d events, want the subscriber closed", n)
	}
	if len(a.History("c")) != 20 {
		t.Fatal("History lost messages")
	}
}

func TestStopEndsSubscriptionsAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // every goroutine must end: no leaks
		a := New(Options{})
		rec := &recorder{}
		ctx, cancelRun := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, rec) }()
		synctest.Wait()
		if !a.Ready() {
			t.Fatal("not ready while running")
		}
		if err := a.Run(ctx, rec); err == nil {
			t.Fatal("a second Run was accepted")
		}
		e1, cancel1 := a.Subscribe("c")
		e2, cancel2 := a.Subscribe("c")
		cancel2()
		cancel2()
		if _, ok := <-e2; ok {
			t.Fatal("a canceled subscription is open")
		}
		if _, err := a.Send(context.Background(), channels.Outgoing{Target: web("c"), Text: "x"}); err != nil {
			t.Fatal(err)
		}
		a.Stop()
		a.Stop()
		for range e1 { // what was queued may arrive; then the channel closes
		}
		cancel1()
		e3, cancel3 := a.Subscribe("c")
		if _, ok := <-e3; ok {
			t.Fatal("a subscription after Stop is open")
		}
		cancel3()
		if _, err := a.Post(context.Background(), "c", "", "hi"); !errors.Is(err, ErrStopped) {
			t.Fatalf("Post after Stop: %v", err)
		}
		cancelRun()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if a.Ready() {
			t.Fatal("ready after Run returned")
		}
	})
}

func TestSubscriptionsEndWithoutLeaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(Options{QueueSize: 1})
		var cancels []func()
		for i := 0; i < 10; i++ {
			_, c := a.Subscribe("c")
			cancels = append(cancels, c)
		}
		_, bad := a.Subscribe("not valid!")
		bad()
		for i := 0; i < 10; i++ {
			a.WriteDelta(web("c"), "x")
			if _, err := a.Send(context.Background(), channels.Outgoing{Target: web("c"), Text: "m"}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cancels {
			c()
		}
		// synctest.Test fails if any goroutine of the bubble is still alive.
	})
}

func TestFormatKeepsMarkdownAndSplitsAtTheLimit(t *testing.T) {
	a := New(Options{MaxChunk: 40})
	md := "Intro **bold** [x](javascript:alert(1))\n\n```go\n" + strings.Repeat("fmt.Println(1)\n", 6) + "```\n"
	chunks := a.Format(md)
	if len(chunks) < 2 {
		t.Fatalf("got %d chunks, want the text split", len(chunks))
	}
	if !strings.Contains(chunks[0].Text, "**bold** [x](javascript:alert(1))") {
		t.Errorf("Markdown was changed: %q", chunks[0].Text)
	}
	for i, c := range chunks {
		if len([]rune(c.Text)) > 40 || c.Text != c.Plain || strings.Count(c.Text, "```")%2 != 0 {
			t.Errorf("chunk %d = %q: over the limit, or a fence broken", i, c.Text)
		}
	}
}
