package ui_test

// The rig of the browser tests: the real daemon (internal/daemon) on a
// config file in a temp dir, the model and Telegram replaced by the fakes
// of internal/testkit, and a headless Chromium (internal/testkit/browser)
// logged in to the console. Every daemon log is captured and checked for
// the secrets the daemon was given; it is dumped when the test fails.

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Secrets given to every daemon of these tests; no page and no log line may
// show them.
const (
	adminToken = "ui-admin-token-very-secret-0123456789"
	llmKey     = "sk-ui-test-very-secret-llm-key-0123456789"
)

// waitLong bounds every wait for something the daemon should do promptly.
const waitLong = time.Minute // a hang detector, not a performance bound

// envScreenshots, set to 1, makes the tests write docs/screenshots/*.png.
const envScreenshots = "SWITCHBOARD_SCREENSHOTS"

const configTemplate = `bot:
  name: Switchboard
  data_dir: ./data
  timezone: UTC
llm:
  base_url: %LLM%
  api_key: ${SB_UI_TEST_LLM_KEY}
  model: fake-model
  timeout: 10s
  max_retries: 0
agent:
  tools: [current_time]
%AGENT%access:
  mode: pairing
channels:
  console:
    enabled: false
  telegram:
    enabled: %TG%
    token: ${SB_UI_TEST_TG_TOKEN}
    api_url: "%TGURL%"
    edit_interval: 10ms
personas:
  dir: ./personas
  default: assistant
server:
  listen: 127.0.0.1:0
  admin_token: ${SB_UI_TEST_ADMIN_TOKEN}
jobs:%JOBS%
`

// rigOptions choose what a test needs.
type rigOptions struct {
	LLM      fakellm.Responder // nil → Echo
	Telegram bool              // run the Telegram channel against a fake
	Watch    bool              // watch config.yaml and the personas directory
	Jobs     string            // YAML list items of jobs: (none when empty)
	Extra    string            // YAML appended to the config file (top-level keys)
	Agent    string            // YAML lines added to the agent: section
}

// rig is one running daemon with its fakes.
type rig struct {
	t    *testing.T
	dir  string
	path string // config.yaml
	d    *daemon.Daemon
	llm  *fakellm.Server
	tg   *faketelegram.Server // nil without Telegram
	log  *logBuf
	base string // http://127.0.0.1:port

	secrets []string
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
}

// startRig writes the config, starts the daemon and waits until it is ready.
// The daemon is stopped when the test ends.
func startRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	if o.LLM == nil {
		o.LLM = fakellm.Echo()
	}
	r := &rig{t: t, dir: t.TempDir(), log: &logBuf{}, done: make(chan error, 1)}
	r.llm = fakellm.Start(t, o.LLM)
	r.path = filepath.Join(r.dir, "config.yaml")
	tgURL, tgToken := "", "123:unused"
	if o.Telegram {
		r.tg = faketelegram.New(t, faketelegram.Options{})
		tgURL, tgToken = r.tg.URL(), r.tg.Token()
	}
	t.Setenv("SB_UI_TEST_LLM_KEY", llmKey)
	t.Setenv("SB_UI_TEST_TG_TOKEN", tgToken)
	t.Setenv("SB_UI_TEST_ADMIN_TOKEN", adminToken)
	r.secrets = []string{llmKey, adminToken}
	if o.Telegram {
		r.secrets = append(r.secrets, tgToken)
	}
	jobs := " []"
	if o.Jobs != "" {
		jobs = "\n" + o.Jobs
	}
	text := strings.NewReplacer("%LLM%", r.llm.URL, "%TG%", boolText(o.Telegram), "%TGURL%", tgURL,
		"%JOBS%", jobs, "%AGENT%", o.Agent).Replace(configTemplate) + o.Extra
	r.write(r.path, text)
	if err := os.MkdirAll(filepath.Join(r.dir, "personas"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(r.path)
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := daemon.New(context.Background(), daemon.Options{
		Config: cfg, Logger: logger, Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{},
		HTTPClient: r.llm.HTTPClient(), RestartBackoff: 20 * time.Millisecond, ShutdownGrace: 2 * time.Second,
		NoWatch: !o.Watch, WatchDebounce: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	r.d = d
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(func() {
		r.stop()
		r.checkLog()
	})
	select {
	case <-d.Ready():
	case err := <-r.done:
		t.Fatalf("daemon stopped before it was ready: %v\n%s", err, r.log.String())
	case <-time.After(waitLong):
		t.Fatalf("daemon not ready after %s\n%s", waitLong, r.log.String())
	}
	r.base = "http://" + d.Addr().String()
	return r
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func (r *rig) write(path, text string) {
	r.t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		r.t.Fatal(err)
	}
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
			r.t.Errorf("the daemon log contains a secret (%d chars, starts %q)", len(s), s[:4])
		}
	}
	if r.t.Failed() {
		r.t.Logf("daemon log:\n%s", out)
	}
}

// browse starts Chromium (skipping the test without one) and logs in.
func (r *rig) browse() *browser.Page {
	r.t.Helper()
	p := browser.Start(r.t, browser.Options{Timeout: waitLong})
	p.Login(r.base, adminToken)
	return p
}

// noSecretShown fails the test if the page's HTML shows a secret.
func (r *rig) noSecretShown(p *browser.Page) {
	r.t.Helper()
	html := p.Eval(`document.documentElement.outerHTML`)
	for _, s := range r.secrets {
		if strings.Contains(html, s) {
			r.t.Fatalf("the page %s shows a secret (%d chars, starts %q)", p.Location(), len(s), s[:4])
		}
	}
}

// screenshot writes docs/screenshots/name.png when SWITCHBOARD_SCREENSHOTS=1,
// so ordinary runs never rewrite the committed images.
func (r *rig) screenshot(p *browser.Page, name string) {
	r.t.Helper()
	if os.Getenv(envScreenshots) != "1" {
		return
	}
	p.Screenshot(filepath.Join("..", "..", "docs", "screenshots", name+".png"))
}

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

// eventually polls cond every few milliseconds until it holds or waitLong
// passes.
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
