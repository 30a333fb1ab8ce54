package hub_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// voiceChannel is the Memory channel with voice notes (channels.VoiceSender).
type voiceChannel struct {
	*console.Memory

	mu     sync.Mutex
	cond   *sync.Cond
	voices []channels.OutgoingFile
	hold   func(ctx context.Context) error // run before a voice note is taken; nil = none
}

func newVoiceChannel() *voiceChannel {
	v := &voiceChannel{Memory: console.NewMemory("memory", 4000, 5*time.Millisecond)}
	v.cond = sync.NewCond(&v.mu)
	return v
}

func (v *voiceChannel) SendVoice(ctx context.Context, f channels.OutgoingFile) (string, error) {
	v.mu.Lock()
	hold := v.hold
	v.mu.Unlock()
	if hold != nil {
		if err := hold(ctx); err != nil {
			return "", err
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.voices = append(v.voices, f)
	v.cond.Broadcast()
	return "v1", nil
}

func (v *voiceChannel) sentVoices() []channels.OutgoingFile {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]channels.OutgoingFile(nil), v.voices...)
}

// spokePreparer plays a transcribed voice note.
type spokePreparer struct{}

func (spokePreparer) PrepareMedia(context.Context, []agent.Media, agent.SaveFile) agent.PreparedMedia {
	return agent.PreparedMedia{Text: "[voice note, transcribed by speech recognition]\nwhat time is it", Spoke: true}
}

// scriptSpeaker reads the answer as it is; Speak fails with err when set.
type scriptSpeaker struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (s *scriptSpeaker) Script(answer string) string { return "SAY: " + answer }
func (s *scriptSpeaker) Speak(_ context.Context, script string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, script)
	if s.err != nil {
		return nil, s.err
	}
	return []byte("OggS:" + script), nil
}

// startVoice runs a handler over the bolt store in dir with a model that
// hears voice notes and the speaker sp.
func startVoice(t *testing.T, dir string, llm *fakellm.Server, ch *voiceChannel, sp hub.Speaker) (*hub.Handler, *bolt.Store) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	ag, err := agent.New(agent.Options{
		BaseURL: llm.URL, APIKey: "test-key", Model: "fake-model", MaxRetries: 1, RetryBase: time.Millisecond,
		RetryMax: 2 * time.Millisecond, Timeout: 10 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: st,
		Media: spokePreparer{},
	})
	if err != nil {
		t.Fatalf("agent: %v", err)
	}
	h := hub.NewHandler(hub.HandlerOptions{
		Store: st, Agent: ag, Access: openAccess(), Speech: func() hub.Speaker { return sp },
		Outbound: outbound.New(st, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}),
	})
	h.Register(ch)
	ch.Attach(h)
	return h, st
}

func stopVoice(h *hub.Handler, st *bolt.Store, crash bool) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	if crash {
		cancel()
	}
	defer cancel()
	h.Close(ctx)
	_ = st.Close()
}

func sayVoice(t *testing.T, ch *voiceChannel, id string) {
	t.Helper()
	if err := ch.Say(context.Background(), channels.Message{ChatID: "dm-ann", MessageID: id, Direct: true,
		Sender: channels.Sender{ID: "ann", Name: "Ann"}, Media: []channels.Media{{MIME: "audio/ogg", Name: "voice.ogg", Data: []byte("OggS")}}}); err != nil {
		t.Fatal(err)
	}
}

// Issue 32: the voice note is a delivery of its own, exactly once. Killed
// while it is being sent (after the text answer), the restart sends the
// voice note again — and the text answer not again; the inbox is then
// empty. A failing speaker leaves the text alone and is not retried at start.
func TestVoiceReplyExactlyOnceAcrossACrash(t *testing.T) {
	const target, answer = "memory:dm-ann", "It is noon."
	llm := fakellm.Start(t, fakellm.Text(answer))
	dir := t.TempDir()
	ch := newVoiceChannel()
	sp := &scriptSpeaker{}
	killed := make(chan struct{})
	ch.hold = func(ctx context.Context) error {
		close(killed)
		<-ctx.Done() // the process dies during the platform call
		return ctx.Err()
	}
	h, st := startVoice(t, dir, llm, ch, sp)
	sayVoice(t, ch, "1")
	select {
	case <-killed:
	case <-time.After(wait):
		t.Fatal("the voice note was never sent")
	}
	stopVoice(h, st, true)
	if msgs := ch.Sent(target); len(msgs) != 1 || msgs[0].Text != answer {
		t.Fatalf("before the restart the chat shows %+v, want the answer", msgs)
	}

	ch.mu.Lock()
	ch.hold = nil
	ch.mu.Unlock()
	h, st = startVoice(t, dir, llm, ch, sp)
	if _, err := h.Replay(context.Background()); err != nil {
		t.Fatal(err)
	}
	ch.mu.Lock()
	for len(ch.voices) == 0 {
		ch.cond.Wait()
	}
	ch.mu.Unlock()
	stopVoice(h, st, false)

	voices := ch.sentVoices()
	if len(voices) != 1 || string(voices[0].Data) != "OggS:SAY: "+answer || voices[0].Name != outbound.VoiceName ||
		voices[0].Target.String() != target {
		t.Errorf("voice notes %+v, want the answer read once", voices)
	}
	if msgs := ch.Sent(target); len(msgs) != 1 {
		t.Errorf("the chat shows %+v, want the answer once", msgs)
	}
	st, err := bolt.Open(filepath.Join(dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if pending, _ := st.InboxPending(context.Background()); len(pending) != 0 {
		t.Errorf("inbox items left after the replay: %+v", pending)
	}
}

func TestVoiceReplyFailingSpeechKeepsTheText(t *testing.T) {
	const target, answer = "memory:dm-ann", "It is noon."
	llm := fakellm.Start(t, fakellm.Text(answer))
	dir := t.TempDir()
	ch := newVoiceChannel()
	sp := &scriptSpeaker{err: errors.New("speech: the endpoint answered 503")}
	h, st := startVoice(t, dir, llm, ch, sp)
	sayVoice(t, ch, "1")
	ch.WaitFor(t, target, wait, "the answer", func(s []console.Sent) bool { return len(s) == 1 })
	stopVoice(h, st, false) // lets the delivery finish

	h, st = startVoice(t, dir, llm, ch, sp) // a restart does not try again
	if _, err := h.Replay(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopVoice(h, st, false)
	sp.mu.Lock()
	calls := len(sp.calls)
	sp.mu.Unlock()
	if calls != 1 || len(ch.sentVoices()) != 0 || len(ch.Sent(target)) != 1 {
		t.Errorf("%d speech calls, %d voice notes, %d messages; want 1, 0, 1", calls, len(ch.sentVoices()), len(ch.Sent(target)))
	}
}
