package loadtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// ReplyChannel is a minimal in-memory channel for handler-level load: it
// pushes user messages into the handler and signals, per token, when a reply
// carrying it is sent. It counts every Send per token, so duplicates show.
type ReplyChannel struct {
	name string
	seq  atomic.Uint64

	mu      sync.Mutex
	sink    channels.Sink
	waiters map[string]chan time.Time
	sends   map[string]int
}

// NewReplyChannel returns a channel called name.
func NewReplyChannel(name string) *ReplyChannel {
	return &ReplyChannel{name: name, waiters: map[string]chan time.Time{}, sends: map[string]int{}}
}

// Name implements channels.Channel.
func (c *ReplyChannel) Name() string { return c.name }

// Run attaches the sink and waits for ctx.
func (c *ReplyChannel) Run(ctx context.Context, sink channels.Sink) error {
	c.mu.Lock()
	c.sink = sink
	c.mu.Unlock()
	<-ctx.Done()
	return nil
}

// Format implements channels.Channel: one chunk, no markup.
func (c *ReplyChannel) Format(md string) []channels.Chunk {
	return []channels.Chunk{{Text: md, Plain: md}}
}

// Send implements channels.Channel.
func (c *ReplyChannel) Send(_ context.Context, out channels.Outgoing) (string, error) {
	now := time.Now()
	toks := tokenRE.FindAllString(out.Text, -1)
	c.mu.Lock()
	for _, tok := range toks {
		c.sends[tok]++
		if ch := c.waiters[tok]; ch != nil {
			delete(c.waiters, tok)
			ch <- now
		}
	}
	c.mu.Unlock()
	return "r" + strconv.FormatUint(c.seq.Add(1), 10), nil
}

// Say hands a direct message from chat to the handler and returns a channel
// that receives the time its reply was sent. Handle's error is returned as is
// (ErrBusy under backpressure).
func (c *ReplyChannel) Say(ctx context.Context, chat int, text, token string) (<-chan time.Time, error) {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	sink := c.sink
	if token != "" {
		c.waiters[token] = ch
	}
	c.mu.Unlock()
	if sink == nil {
		return nil, errors.New("reply channel: not running")
	}
	id := strconv.Itoa(chat)
	err := sink.Handle(ctx, channels.Message{Channel: c.name, ChatID: id, MessageID: "u" + strconv.FormatUint(c.seq.Add(1), 10),
		Sender: channels.Sender{ID: id, Name: "user" + id}, Text: text, Direct: true, Time: time.Now()})
	if err != nil && token != "" {
		c.mu.Lock()
		delete(c.waiters, token)
		c.mu.Unlock()
	}
	return ch, err
}

// Sends is how many sent messages carried token.
func (c *ReplyChannel) Sends(token string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sends[token]
}

// Ready reports whether Run attached the sink.
func (c *ReplyChannel) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sink != nil
}

// InprocConfig is a config for an in-process daemon with durable storage in
// dir, the fake model at llmURL, open access, no console, no HTTP listener.
func InprocConfig(dir, llmURL string, maxTurns int) *config.Config {
	cfg := config.Default()
	cfg.Bot.DataDir = filepath.Join(dir, "data")
	cfg.Bot.Timezone = "UTC"
	cfg.Personas.Dir = filepath.Join(dir, "personas")
	cfg.LLM.BaseURL = llmURL
	cfg.LLM.APIKey = config.NewSecret(LLMKey)
	cfg.LLM.Model = "fake-model"
	cfg.LLM.ToolProtocol = "native"
	cfg.Agent.Tools = []string{"current_time"}
	cfg.Agent.MaxConcurrentTurns = maxTurns
	cfg.Access.Mode = "open"
	console.ConfigIn(cfg.Channels).Enabled = false
	cfg.Server.Listen = ""
	return cfg
}

// Model is the model endpoint an in-process daemon talks to.
type Model interface {
	RequestCount() int
	Close()
}

// Inproc is a daemon running in this process with a ReplyChannel.
type Inproc struct {
	Model   Model
	Chan    *ReplyChannel
	Daemon  *daemon.Daemon
	DBPath  string
	cancel  context.CancelFunc
	done    chan error
	stopped atomic.Bool
}

// StartInproc starts an in-process daemon (durable store in dir) answering
// through the fake model r, or through the lean EchoModel when r is nil.
func StartInproc(ctx context.Context, dir string, maxTurns int, r fakellm.Responder, log *slog.Logger) (*Inproc, error) {
	if r == nil {
		m := NewEchoModel()
		return StartInprocModel(ctx, dir, maxTurns, m, m.URL, log)
	}
	m := fakellm.New(r)
	return StartInprocModel(ctx, dir, maxTurns, m, m.URL, log)
}

// StartInprocModel starts an in-process daemon answering through the model
// endpoint at url (llm.base_url); Stop closes llm with the daemon.
func StartInprocModel(ctx context.Context, dir string, maxTurns int, llm Model, url string, log *slog.Logger) (*Inproc, error) {
	cfg := InprocConfig(dir, url, maxTurns)
	ch := NewReplyChannel("load")
	// HTTPClient stays nil: the daemon's own default client is what is measured.
	d, err := daemon.New(ctx, daemon.Options{Config: cfg, Logger: log, Channels: []channels.Channel{ch}})
	if err != nil {
		llm.Close()
		return nil, fmt.Errorf("build daemon: %w", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	ip := &Inproc{Model: llm, Chan: ch, Daemon: d, DBPath: cfg.DBPath(), cancel: cancel, done: make(chan error, 1)}
	go func() { ip.done <- d.Run(rctx) }()
	select {
	case <-d.Ready():
	case err := <-ip.done:
		cancel()
		llm.Close()
		return nil, fmt.Errorf("daemon stopped at start: %w", err)
	}
	for !ch.Ready() {
		time.Sleep(time.Millisecond)
	}
	return ip, nil
}

// Stop shuts the daemon down (closing the store) and the fake model; idempotent.
func (ip *Inproc) Stop() {
	if ip.stopped.Swap(true) {
		return
	}
	ip.cancel()
	<-ip.done
	ip.Model.Close()
}
