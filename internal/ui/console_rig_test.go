package ui_test

// The rig of the console's HTTP tests (no browser): the real daemon
// (internal/daemon) on a config file in a temp dir with the fake model (and
// optionally the fake Telegram), its log captured and checked for secrets.
// Names start with "c" so they stay apart from the browser tests' rig.

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

const (
	cAdminToken = "console-admin-token-very-secret-0123456789"
	cLLMKey     = "sk-console-very-secret-llm-key-0123456789"
	cWait       = time.Minute // a hang detector, not a performance bound
)

const cConfig = `# Switchboard test config
bot:
  data_dir: ./data
  timezone: UTC
llm:
  base_url: %LLM%
  api_key: ${SB_CONSOLE_LLM_KEY}
  model: fake-model
  timeout: 10s
  max_retries: 0
%LLMX%agent:
  tools: [current_time]
%AGENT%access:
  mode: pairing
channels:
  console:
    enabled: false
  telegram:
    enabled: %TG%
    token: ${SB_CONSOLE_TG_TOKEN}
    api_url: "%TGURL%"
personas:
  dir: ./personas
server:
  listen: %LISTEN%
%TOKEN%`

type cOptions struct {
	LLM      fakellm.Responder // nil: Echo
	Telegram bool
	Extra    string // YAML appended to the config file
	Agent    string // YAML lines added to the agent: section
	// LLMSection is YAML lines added to the llm: section.
	LLMSection string
	Listen     string // server.listen; default 127.0.0.1:0
	NoToken    bool   // no server.admin_token
	// Channels are extra channels the daemon runs (daemon.Options.Channels).
	Channels []channels.Channel
}

type cRig struct {
	t       *testing.T
	dir     string
	path    string
	d       *daemon.Daemon
	llm     *fakellm.Server
	tg      *faketelegram.Server
	base    string
	log     *cLog
	secrets []string
}

func startConsole(t *testing.T, o cOptions) *cRig {
	t.Helper()
	if o.LLM == nil {
		o.LLM = fakellm.Echo()
	}
	r := &cRig{t: t, dir: t.TempDir(), log: &cLog{}}
	r.path = filepath.Join(r.dir, "config.yaml")
	r.llm = fakellm.Start(t, o.LLM)
	tgURL, tgToken := "", "123:unused"
	if o.Telegram {
		r.tg = faketelegram.New(t, faketelegram.Options{})
		tgURL, tgToken = r.tg.URL(), r.tg.Token()
	}
	t.Setenv("SB_CONSOLE_LLM_KEY", cLLMKey)
	t.Setenv("SB_CONSOLE_TG_TOKEN", tgToken)
	t.Setenv("SB_CONSOLE_ADMIN_TOKEN", cAdminToken)
	r.secrets = []string{cLLMKey, cAdminToken}
	if o.Telegram {
		r.secrets = append(r.secrets, tgToken)
	}
	tg := "false"
	if o.Telegram {
		tg = "true"
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	token := "  admin_token: ${SB_CONSOLE_ADMIN_TOKEN}\n"
	if o.NoToken {
		token = ""
	}
	text := strings.NewReplacer("%LLM%", r.llm.URL, "%TG%", tg, "%TGURL%", tgURL, "%AGENT%", o.Agent, "%LLMX%", o.LLMSection,
		"%LISTEN%", o.Listen, "%TOKEN%", token).Replace(cConfig) + o.Extra
	if err := os.WriteFile(r.path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(r.path)
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	d, err := daemon.New(context.Background(), daemon.Options{Config: cfg,
		Logger: slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Stdin:  strings.NewReader(""), Stdout: &bytes.Buffer{}, HTTPClient: r.llm.HTTPClient(),
		RestartBackoff: 20 * time.Millisecond, ShutdownGrace: 2 * time.Second, NoWatch: true, Channels: o.Channels})
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	r.d = d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon.Run: %v", err)
			}
		case <-time.After(cWait):
			t.Errorf("the daemon did not stop within %s", cWait)
		}
		out := r.log.String()
		for _, s := range r.secrets {
			if strings.Contains(out, s) {
				t.Errorf("the daemon log shows a secret (%d chars, starts %q)", len(s), s[:4])
			}
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", out)
		}
	})
	select {
	case <-d.Ready():
	case err := <-done:
		t.Fatalf("the daemon stopped before it was ready: %v\n%s", err, r.log.String())
	case <-time.After(cWait):
		t.Fatalf("the daemon is not ready after %s", cWait)
	}
	_, port, err := net.SplitHostPort(d.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r.base = "http://127.0.0.1:" + port // also when it listens on every address
	return r
}

// cLog is a goroutine-safe log sink.
type cLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *cLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *cLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// cEventually polls cond until it holds or cWait passes.
func cEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(cWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", cWait, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cToolThenAnswer answers with a current_time call, then with answer.
func cToolThenAnswer(answer string) fakellm.Responder {
	return fakellm.Match(
		fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{Content: answer})},
		fakellm.Rule{Respond: fakellm.Reply(fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}})},
	)
}
