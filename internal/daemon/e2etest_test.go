package daemon_test

// Shared helpers of the end-to-end tests: each test starts the real daemon
// (daemon.New + Run) against the platform fakes in internal/testkit and the
// fake LLM, talks to it through the fake as a user would and asserts what
// arrives on the platform. Every daemon's log is captured; when the test ends
// the log is scanned for the secrets the daemon was given (they must never
// appear) and dumped when the test failed.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// waitLong bounds every wait for something the daemon should do promptly.
// It is a hang detector, not a performance bound: each wait returns as soon
// as what it waits for happened, and on a loaded machine (go test ./... at
// load average 10–17 on two cores, with -race) a daemon's start, a turn or
// a takeover can take several seconds.
const waitLong = 30 * time.Second

// llmKey is the model API key given to every daemon; it must never be logged.
const llmKey = "sk-e2e-very-secret-llm-key-0123456789"

// logBuf is a goroutine-safe log sink.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// baseConfig is config.Default with everything pointed at the test: data and
// personas in temp dirs, the HTTP server on a free loopback port, the model at
// llm, open access, no console, short edit intervals.
func baseConfig(t *testing.T, llm *fakellm.Server) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Bot.DataDir = t.TempDir()
	cfg.Bot.Timezone = "UTC"
	cfg.Personas.Dir = t.TempDir()
	cfg.Server.Listen = "127.0.0.1:0"
	console.ConfigIn(cfg.Channels).Enabled = false
	cfg.Access.Mode = "open"
	cfg.LLM.BaseURL = llm.URL
	cfg.LLM.APIKey = config.NewSecret(llmKey)
	cfg.LLM.Timeout = 10 * time.Second
	cfg.LLM.MaxRetries = 0
	cfg.Agent.Tools = []string{"current_time"}
	telegram.ConfigIn(cfg.Channels).EditInterval = 10 * time.Millisecond
	discord.ConfigIn(cfg.Channels).EditInterval = 10 * time.Millisecond
	slack.ConfigIn(cfg.Channels).EditInterval = 10 * time.Millisecond
	return cfg
}

// rig is one running daemon.
type rig struct {
	t       *testing.T
	d       *daemon.Daemon
	log     *logBuf
	secrets []string
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
}

// startDaemon builds and runs a daemon on cfg and waits until it is ready.
// The daemon is stopped when the test ends; its log must not contain any of
// secrets (the LLM key is always checked).
func startDaemon(t *testing.T, cfg *config.Config, secrets ...string) *rig {
	t.Helper()
	return startDaemonWithLog(t, cfg, &logBuf{}, 2*time.Second, secrets...)
}

// startDaemonWithLog is startDaemon with a given log sink and shutdown grace.
func startDaemonWithLog(t *testing.T, cfg *config.Config, lb *logBuf, grace time.Duration, secrets ...string) *rig {
	t.Helper()
	return startDaemonWith(t, cfg, lb, grace, nil, secrets...)
}

// startDaemonWith is startDaemonWithLog with the options changed by mod.
func startDaemonWith(t *testing.T, cfg *config.Config, lb *logBuf, grace time.Duration, mod func(*daemon.Options), secrets ...string) *rig {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := daemon.Options{
		Config:         cfg,
		Logger:         logger,
		Stdin:          strings.NewReader(""),
		Stdout:         io.Discard,
		RestartBackoff: 20 * time.Millisecond,
		ShutdownGrace:  grace,
	}
	if mod != nil {
		mod(&opts)
	}
	d, err := daemon.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, d: d, log: lb, secrets: append([]string{llmKey}, secrets...), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(func() {
		r.stop()
		r.checkLog()
	})
	select {
	case <-d.Ready():
	case err := <-r.done:
		t.Fatalf("daemon stopped before it was ready: %v\n%s", err, lb.String())
	case <-time.After(waitLong):
		t.Fatalf("daemon not ready after %s\n%s", waitLong, lb.String())
	}
	return r
}

// stop cancels the daemon and waits for Run to return; idempotent.
func (r *rig) stop() {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				r.t.Errorf("daemon.Run: %v", err)
			}
		case <-time.After(waitLong):
			r.t.Errorf("daemon did not stop within %s", waitLong)
		}
	})
}

// checkLog fails the test when a secret appears in the log and dumps the log
// of a failed test.
func (r *rig) checkLog() {
	out := r.log.String()
	for _, s := range r.secrets {
		if s != "" && strings.Contains(out, s) {
			r.t.Errorf("the daemon log contains a secret (%d chars, starts %q)", len(s), s[:min(4, len(s))])
		}
	}
	if r.t.Failed() {
		r.t.Logf("daemon log:\n%s", out)
	}
}

// url is the daemon's HTTP base URL.
func (r *rig) url() string { return "http://" + r.d.Addr().String() }

// readyz returns the status and body of GET /readyz.
func (r *rig) readyz() (int, string) {
	r.t.Helper()
	resp, err := http.Get(r.url() + "/readyz")
	if err != nil {
		r.t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventually polls cond every few milliseconds until it holds or waitLong passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitLong, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle gives the daemon a short moment to do something it must not do
// (answer an ignored message, send a duplicate). It is a bounded negative
// check, not a synchronisation point.
func settle() { time.Sleep(150 * time.Millisecond) }

// userTexts lists the user texts of the model requests (runtime context stripped).
func userTexts(llm *fakellm.Server) []string {
	var out []string
	for _, r := range llm.Requests() {
		out = append(out, r.LastUserText())
	}
	return out
}

// sessionExists reports whether the store holds a session under key.
func sessionExists(t *testing.T, r *rig, key string) bool {
	t.Helper()
	list, err := r.d.Store().ListSessions(context.Background())
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	for _, s := range list {
		if s.Key == key {
			return true
		}
	}
	return false
}

// sessionKeys lists the stored session keys.
func sessionKeys(t *testing.T, r *rig) []string {
	t.Helper()
	list, err := r.d.Store().ListSessions(context.Background())
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	var out []string
	for _, s := range list {
		out = append(out, s.Key)
	}
	return out
}

// longAnswer builds a Markdown answer of about n characters with code fences
// spread through it, so splitting has fences to respect.
func longAnswer(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if i%4 == 3 {
			b.WriteString("```go\n")
			for j := 0; j < 6; j++ {
				b.WriteString("fmt.Println(\"line of code number ")
				b.WriteString(strings.Repeat("x", j))
				b.WriteString("\")\n")
			}
			b.WriteString("```\n\n")
			continue
		}
		fmt.Fprintf(&b, "Paragraph %03d ", i)
		b.WriteString(strings.Repeat("word ", 40))
		b.WriteString("end.\n\n")
	}
	return b.String()
}

// fenceBalanced reports whether every ``` opened in s is closed in s.
func fenceBalanced(s string) bool { return strings.Count(s, "```")%2 == 0 }

// The fakes show a streamed answer while it is still being edited, so stories
// wait for the text a user finally reads, not just for a message to exist.

// tgWaitText waits until the n-th bot message in chat (1-based) satisfies ok
// and returns the bot's messages.
func tgWaitText(t *testing.T, tg *faketelegram.Server, chat int64, n int, ok func(string) bool) []faketelegram.SentMessage {
	t.Helper()
	var sent []faketelegram.SentMessage
	eventually(t, fmt.Sprintf("bot message %d in telegram chat %d", n, chat), func() bool {
		sent = tg.Sent(chat)
		return len(sent) >= n && ok(sent[n-1].Plain)
	})
	return sent
}

// dcWaitText is tgWaitText for a Discord channel.
func dcWaitText(t *testing.T, dc *fakediscord.Server, channel string, n int, ok func(string) bool) []fakediscord.Message {
	t.Helper()
	var sent []fakediscord.Message
	eventually(t, fmt.Sprintf("bot message %d in discord channel %s", n, channel), func() bool {
		sent = dc.Sent(channel)
		return len(sent) >= n && ok(sent[n-1].Content)
	})
	return sent
}

// slWaitText is tgWaitText for a Slack channel (updates applied).
func slWaitText(t *testing.T, sl *fakeslack.Server, channel string, n int, ok func(string) bool) []slackView {
	t.Helper()
	var sent []slackView
	eventually(t, fmt.Sprintf("bot message %d in slack channel %s", n, channel), func() bool {
		sent = slackMessages(sl, channel)
		return len(sent) >= n && ok(sent[n-1].Text)
	})
	return sent
}

// is matches a text equal to want.
func is(want string) func(string) bool { return func(s string) bool { return s == want } }

// has matches a text containing every part.
func has(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}
