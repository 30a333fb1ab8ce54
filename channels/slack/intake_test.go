package slack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

// gateSink blocks Handle for the chats in gates until released (or ctx ends:
// then it refuses, as the real handler does when it cannot persist), and
// records accepted message ids per chat.
type gateSink struct {
	mu          sync.Mutex
	byChat      map[string][]string
	gates       map[string]chan struct{}
	inflight    int
	maxInflight int
	entered     chan string
	changed     chan struct{}
}

func newGateSink(blocked ...string) *gateSink {
	s := &gateSink{byChat: map[string][]string{}, gates: map[string]chan struct{}{},
		entered: make(chan string, 1000), changed: make(chan struct{}, 1)}
	for _, c := range blocked {
		s.gates[c] = make(chan struct{})
	}
	return s
}

func (s *gateSink) Handle(ctx context.Context, m channels.Message) error {
	s.mu.Lock()
	s.inflight++
	s.maxInflight = max(s.maxInflight, s.inflight)
	gate := s.gates[m.ChatID]
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}()
	s.entered <- m.ChatID
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return fmt.Errorf("not persisted: %w", ctx.Err())
		}
	} else {
		time.Sleep(time.Millisecond) // a commit's worth of work, so Handles overlap
	}
	s.mu.Lock()
	s.byChat[m.ChatID] = append(s.byChat[m.ChatID], m.MessageID)
	s.mu.Unlock()
	return nil
}

func (s *gateSink) release(chat string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gates[chat])
	delete(s.gates, chat)
}

func (s *gateSink) of(chat string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.byChat[chat])
}

func (s *gateSink) waitFor(t *testing.T, chat string, n int) []string {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		if got := s.of(chat); len(got) >= n {
			return got
		}
		select {
		case <-s.changed:
		case <-deadline.C:
			t.Fatalf("sink: timed out waiting for %d messages of %s; got %v", n, chat, s.of(chat))
		}
	}
}

func (s *gateSink) waitEntered(t *testing.T, chat string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case c := <-s.entered:
			if c == chat {
				return
			}
		case <-deadline:
			t.Fatalf("no Handle call for %s", chat)
		}
	}
}

// runSocket runs the adapter (Socket Mode unless mod says otherwise) with
// sink until the test ends; out, if given, receives the adapter.
func runSocket(t *testing.T, f *fakeslack.Server, sink channels.Sink, mod func(*Options), out ...**Adapter) (stop func() error) {
	t.Helper()
	opts := testOptions(f)
	if mod != nil {
		mod(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range out {
		*p = c
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx, sink) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-errc:
			case <-time.After(wait):
				runErr = fmt.Errorf("Run did not return after cancel")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitReady(t, c)
	return stop
}

// says sends n messages into channel and returns their message ids and
// envelope ids.
func says(f *fakeslack.Server, channel string, n int) (ids, envs []string) {
	for i := range n {
		m, env := f.UserSays(channel, "U1", fmt.Sprintf("%s #%d", channel, i))
		ids, envs = append(ids, channel+":"+m.TS), append(envs, env)
	}
	return ids, envs
}

func TestSocketIntakeSlowChatDoesNotHoldUpOthers(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	sink := newGateSink("CB")
	runSocket(t, f, sink, nil)
	bIDs, bEnvs := says(f, "CB", 2)
	sink.waitEntered(t, "CB")
	aIDs, aEnvs := says(f, "CA", 4)
	if got := sink.waitFor(t, "CA", 4); !slices.Equal(got, aIDs) {
		t.Fatalf("chat A got %v, want %v in order", got, aIDs)
	}
	for _, env := range aEnvs {
		f.WaitAcked(t, env, wait)
	}
	if un := f.Unacked(); !slices.Equal(un, bEnvs) {
		t.Fatalf("unacked = %v, want only chat B's %v (its Handle has not returned)", un, bEnvs)
	}
	sink.release("CB")
	if got := sink.waitFor(t, "CB", 2); !slices.Equal(got, bIDs) {
		t.Fatalf("chat B got %v, want %v", got, bIDs)
	}
	f.WaitAllAcked(t, wait)
}

func TestSocketIntakeKeepsEachChatInOrderAcrossConcurrentChats(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	sink := newGateSink()
	runSocket(t, f, sink, func(o *Options) { o.IntakeWorkers = 4 })
	const chats, per = 6, 12
	want := map[string][]string{}
	for i := range per {
		for c := range chats {
			ch := fmt.Sprint("C", c)
			m, _ := f.UserSays(ch, "U1", fmt.Sprint("m", i))
			want[ch] = append(want[ch], ch+":"+m.TS)
		}
	}
	for ch, ids := range want {
		if got := sink.waitFor(t, ch, per); !slices.Equal(got, ids) {
			t.Errorf("chat %s got %v, want %v", ch, got, ids)
		}
	}
	f.WaitAllAcked(t, wait)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.maxInflight < 2 {
		t.Errorf("at most %d Handle call(s) ran at once; want chats handled concurrently", sink.maxInflight)
	}
}

// Stopping with envelopes running and queued acks nothing that was not
// handled: Slack redelivers all of them.
func TestSocketIntakeStopAcksOnlyHandledEnvelopes(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	sink := newGateSink("CB")
	stop := runSocket(t, f, sink, nil)
	_, aEnvs := says(f, "CA", 1)
	f.WaitAcked(t, aEnvs[0], wait)
	_, bEnvs := says(f, "CB", 3)
	sink.waitEntered(t, "CB")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := sink.of("CB"); len(got) != 0 {
		t.Fatalf("blocked messages accepted: %v", got)
	}
	for _, a := range f.Acks() {
		if slices.Contains(bEnvs, a.EnvelopeID) {
			t.Fatalf("envelope %s acked though Handle never accepted it", a.EnvelopeID)
		}
	}
	if un := f.Unacked(); !slices.Equal(un, bEnvs) {
		t.Fatalf("unacked = %v, want %v", un, bEnvs)
	}
}

// A full lane leaves the envelope unacked; Slack's redelivery is handled.
func TestSocketIntakeFullLaneLeavesEnvelopeForRedelivery(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	sink := newGateSink("CB")
	runSocket(t, f, sink, func(o *Options) { o.IntakeDepth = 1 })
	bIDs, bEnvs := says(f, "CB", 1)
	sink.waitEntered(t, "CB")
	more, moreEnvs := says(f, "CB", 2) // one queued, one refused
	bIDs, bEnvs = append(bIDs, more...), append(bEnvs, moreEnvs...)
	// Chat A proves the refused envelope was read (events are read in order).
	_, aEnvs := says(f, "CA", 1)
	f.WaitAcked(t, aEnvs[0], wait)
	sink.release("CB")
	if got := sink.waitFor(t, "CB", 2); !slices.Equal(got, bIDs[:2]) {
		t.Fatalf("chat B got %v, want %v", got, bIDs[:2])
	}
	f.WaitAcked(t, bEnvs[1], wait)
	if un := f.Unacked(); !slices.Equal(un, bEnvs[2:]) {
		t.Fatalf("unacked = %v, want the refused %v", un, bEnvs[2:])
	}
	retry := f.Redeliver(bEnvs[2])
	f.WaitAcked(t, retry, wait)
	if got := sink.waitFor(t, "CB", 3); !slices.Equal(got, bIDs) {
		t.Fatalf("after redelivery chat B got %v, want %v", got, bIDs)
	}
}

// HTTP mode: a request whose Handle is slow does not hold up another
// channel's request.
func TestHTTPIntakeSlowChatDoesNotHoldUpOthers(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	now := time.Unix(1_700_000_000, 0)
	sink := newGateSink("CB")
	var c *Adapter
	runSocket(t, f, sink, func(o *Options) {
		o.Mode, o.AppToken, o.SigningSecret = ModeHTTP, "", secret
		o.Now = func() time.Time { return now }
	}, &c)
	mux := http.NewServeMux()
	mux.Handle(c.WebhookPattern(), c.WebhookHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	url := srv.URL + "/webhooks/slack/events"

	bDone := make(chan int, 1)
	go func() {
		code, _ := postEvent(t, f, url, now, "CB")
		bDone <- code
	}()
	sink.waitEntered(t, "CB")
	for range 2 {
		if code, err := postEvent(t, f, url, now, "CA"); err != nil || code != http.StatusOK {
			t.Fatalf("chat A's request while chat B's is in Handle: %d %v, want 200", code, err)
		}
	}
	if got := sink.of("CA"); len(got) != 2 {
		t.Fatalf("chat A accepted %v, want 2 messages", got)
	}
	sink.release("CB")
	if code := <-bDone; code != http.StatusOK {
		t.Fatalf("chat B's request: %d, want 200", code)
	}
}

func postEvent(t *testing.T, f *fakeslack.Server, url string, now time.Time, channel string) (int, error) {
	t.Helper()
	m := fakeslack.Message{Channel: channel, User: "U1", Text: "hi " + channel, TS: f.NextTS()}
	body, _ := f.EventCallback(m.Event())
	resp, err := http.DefaultClient.Do(fakeslack.SignedRequest(url, secret, now, body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
