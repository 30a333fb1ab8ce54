package daemon_test

// A platform is one package: this test adds a dummy platform, "echo", the
// way a new platform package would — a Descriptor and an adapter, nothing
// else — and shows it flows through config decoding and validation
// (file:line, ${ENV}, secrets redacted, defaults in `config get`), the
// daemon's construction, its webhook route, the formatting hint the model
// gets, and doctor. The only line it adds outside "its package" is the
// registry entry: platforms.Builtin.With(echoPlatform) here, one line of
// internal/platforms/builtin.go for a real platform.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/doctor"
	"github.com/switchboard-bot/switchboard/internal/platforms"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// ---- the dummy platform package ----

type echoConfig struct {
	Enabled  bool            `yaml:"enabled"`
	Token    platform.Secret `yaml:"token"`
	Greeting string          `yaml:"greeting"`
	Limit    int             `yaml:"limit"`
}

func (c *echoConfig) IsEnabled() bool { return c.Enabled }

const echoHint = "Echo: plain text, no Markdown."

var echoPlatform = platform.Descriptor{
	Name:        "echo",
	Section:     func() platform.Section { return &echoConfig{Greeting: "hi", Limit: 500} },
	EnvDefaults: []platform.EnvDefault{{Key: "token", Env: "ECHO_TOKEN"}},
	Validate: func(s platform.Section, _ platform.Env, v *platform.Checker) {
		c := s.(*echoConfig)
		v.Positive("limit", c.Limit)
		if c.Enabled {
			v.Require("token", c.Token.IsSet(), "channels.echo is enabled")
		}
	},
	New: func(_ context.Context, s platform.Section, _ platform.Deps) (channels.Channel, error) {
		return &echoAdapter{limit: s.(*echoConfig).Limit, sent: make(chan string, 8), running: make(chan struct{})}, nil
	},
	Hint:   echoHint,
	Routes: []platform.Route{{Method: "POST", Path: "/webhooks/echo"}},
	Doctor: []platform.Check{{Name: "echo", Run: func(_ context.Context, s platform.Section, _ platform.Deps) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusOK, Finding: "echo token is " + fmt.Sprint(s.(*echoConfig).Token)}
	}}},
}

// echoAdapter receives messages posted to its webhook and records sends.
type echoAdapter struct {
	limit   int
	sink    atomic.Pointer[channels.Sink]
	running chan struct{}
	once    sync.Once
	seq     atomic.Int64
	sent    chan string
}

func (a *echoAdapter) Name() string { return "echo" }

func (a *echoAdapter) Run(ctx context.Context, sink channels.Sink) error {
	a.sink.Store(&sink)
	a.once.Do(func() { close(a.running) })
	<-ctx.Done()
	return nil
}

func (a *echoAdapter) Send(_ context.Context, out channels.Outgoing) (string, error) {
	a.sent <- out.Text
	return fmt.Sprint(a.seq.Add(1)), nil
}

func (a *echoAdapter) Format(md string) []channels.Chunk {
	var out []channels.Chunk
	for _, s := range markup.Split(md, a.limit) {
		out = append(out, channels.Chunk{Text: s, Plain: s})
	}
	return out
}

func (a *echoAdapter) WebhookPattern() string { return "POST /webhooks/echo" }

func (a *echoAdapter) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-a.running
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		msg := channels.Message{Channel: "echo", ChatID: "c1", MessageID: fmt.Sprint(a.seq.Add(1)),
			Sender: channels.Sender{ID: "u1"}, Text: body.String(), Direct: true, Time: time.Now()}
		if err := (*a.sink.Load()).Handle(r.Context(), msg); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// ---- the test ----

func TestDummyPlatformFlowsThroughRegistry(t *testing.T) {
	reg, err := platforms.Builtin.With(echoPlatform) // the one line
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"ECHO_TOKEN": "echo-secret-token-1234", "OTHER": "x"}[k]
		return v, ok
	}

	// Config: unknown keys with file:line, a missing token named by its
	// variable, ${ENV} defaults, redaction, defaults in `config get`.
	_, err = config.ParseWith(reg, "c.yaml", []byte("channels:\n  echo:\n    enabled: true\n    greting: x\n"), env)
	if err == nil || !strings.Contains(err.Error(), `c.yaml:4: unknown key "greting" in channels.echo (did you mean "greeting"?)`) {
		t.Errorf("unknown key: %v", err)
	}
	_, err = config.ParseWith(reg, "c.yaml", []byte("channels:\n  echo:\n    enabled: true\n    token: ${OTHER_TOKEN}\n    limit: 0\n"), env)
	if err == nil || !strings.Contains(err.Error(), "c.yaml:4: channels.echo.token is empty") || !strings.Contains(err.Error(), "OTHER_TOKEN") ||
		!strings.Contains(err.Error(), "c.yaml:5: channels.echo.limit: must be a positive integer, got 0") {
		t.Errorf("validation: %v", err)
	}
	if _, err := config.Parse("c.yaml", []byte("channels:\n  echo: {enabled: true}\n"), env); err == nil ||
		!strings.Contains(err.Error(), `unknown key "echo" in channels`) {
		t.Errorf("the built-in registry knows no echo: %v", err)
	}

	llm := fakellm.New(fakellm.Text("echoed back"))
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	yaml := fmt.Sprintf(`bot: {data_dir: %q, timezone: UTC}
personas: {dir: %q}
llm: {base_url: %q, api_key: %s, max_retries: 0}
access: {mode: open}
server: {listen: "127.0.0.1:0"}
channels:
  console: {enabled: false}
  echo: {enabled: true, greeting: hello}
jobs:
  - {name: echo-daily, schedule: "0 9 * * *", kind: reminder, text: hi, deliver_to: ["echo:c1"]}
`, filepath.Join(dir, "data"), t.TempDir(), llm.URL, llmKey)
	cfg, err := config.ParseWith(reg, filepath.Join(dir, "config.yaml"), []byte(yaml), env)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"channels.echo.greeting": "hello", "channels.echo.limit": "500",
		"channels.echo.token": "[redacted]"} {
		if got, err := config.Get(cfg, key); err != nil || got != want {
			t.Errorf("config get %s = %q, %v; want %q", key, got, err, want)
		}
	}
	if out, _ := cfg.RedactedYAML(); !strings.Contains(string(out), "echo:") || strings.Contains(string(out), "echo-secret-token") {
		t.Errorf("rendered config: %s", out)
	}

	// Targets: "echo:c1" is an address (config jobs above, personas), an
	// unknown platform is not.
	if _, err := config.ParseWith(reg, "c.yaml", []byte("personas:\n  by_target: {\"nosuch:c1\": assistant}\n"), env); err == nil ||
		!strings.Contains(err.Error(), `unknown channel "nosuch" (one of `+strings.Join(reg.Names(), ", ")+`)`) || !strings.HasSuffix(strings.Join(reg.Names(), ","), ",web,echo") {
		t.Errorf("unknown target channel: %v", err)
	}

	// Daemon: constructed from the descriptor, its webhook route mounted, the
	// model told the platform's formatting hint.
	r := startDaemon(t, cfg, "echo-secret-token-1234")
	resp, err := http.Post("http://"+r.d.Addr().String()+"/webhooks/echo", "text/plain", strings.NewReader("ping"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /webhooks/echo: %s", resp.Status)
	}
	ch, ok := r.d.Handler().Channel("echo")
	if !ok {
		t.Fatal("echo is not registered")
	}
	select {
	case got := <-ch.(*echoAdapter).sent:
		if got != "echoed back" {
			t.Errorf("sent %q", got)
		}
	case <-time.After(waitLong):
		t.Fatal("no answer sent through the echo channel")
	}
	if reqs := llm.Requests(); len(reqs) == 0 || !strings.Contains(string(reqs[0].Raw), echoHint) {
		t.Errorf("the model was not given the echo hint")
	}

	// Jobs: the scheduler knows echo from the registry (a job created at
	// run time, as the schedule tool and the web console create them).
	jobs := r.d.Scheduler().Jobs()
	job := heartbeat.JobSpec{Name: "echo-hourly", Kind: heartbeat.KindReminder, Schedule: "0 * * * *", Text: "hi", DeliverTo: []string{"echo:c1"}}
	if err := jobs.Create(context.Background(), job); err != nil {
		t.Errorf("a job delivering to echo:c1: %v", err)
	}
	job.Name, job.DeliverTo = "nosuch-hourly", []string{"nosuch:c1"}
	if err := jobs.Create(context.Background(), job); err == nil || !strings.Contains(err.Error(), `unknown channel "nosuch"`) {
		t.Errorf("a job delivering to nosuch:c1: %v", err)
	}

	// Doctor: the descriptor's check runs; the token is scrubbed.
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(yaml, `listen: "127.0.0.1:0"`, `listen: ""`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	results := doctor.Check(context.Background(), doctor.Options{ConfigPath: path, LookupEnv: env, Platforms: reg, Timeout: 2 * time.Second})
	var found bool
	for _, res := range results {
		if res.Name == "echo" {
			found = res.Status == doctor.StatusOK && res.Finding == "echo token is [redacted]"
		}
		if res.Name == doctor.CheckConfig && !strings.Contains(res.Finding, "echo") {
			t.Errorf("doctor's config finding does not list echo: %s", res.Finding)
		}
	}
	if !found {
		t.Errorf("doctor: no ok echo check in %+v", results)
	}
}
