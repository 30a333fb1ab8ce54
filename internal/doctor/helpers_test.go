package doctor

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
	"github.com/switchboard-bot/switchboard/personas"
)

// Token values used throughout; the secret scan looks for each of them.
const (
	testAPIKey      = "sk-doctor-test-key-4f9a8b7c6d5e"
	testDiscordTok  = "MTIzNDU2Nzg5MDEyMzQ1Njc4.doctor.discord-secret"
	testSigning     = "8f14e45fceea167a5a36dedd4bea2543"
	testWebhookSec  = "tg_webhook_secret_0123456789"
	testAdminToken  = "admin-token-doctor-0123456789"
	wrongTelegram   = "987654321:AAWrongTokenDoctorTest_abcdefghijk"
	wrongSlackBot   = "xoxb-wrong-doctor-bot-token-111"
	wrongSlackApp   = "xapp-wrong-doctor-app-token-222"
	wrongDiscordTok = "wrong.discord.token.doctor.333"
)

// fakes is one set of platform fakes shared by a test's cases.
type fakes struct {
	llm      *fakellm.Server
	telegram *faketelegram.Server
	slack    *fakeslack.Server
	discord  *fakediscord.Server
}

func startFakes(t *testing.T) *fakes {
	t.Helper()
	return &fakes{
		llm:      fakellm.Start(t, fakellm.Echo()),
		telegram: faketelegram.New(t, faketelegram.Options{}),
		slack:    fakeslack.New(t, fakeslack.Options{}),
		discord:  fakediscord.Start(t, fakediscord.Options{Token: testDiscordTok}),
	}
}

// spec is the configuration a case runs with; zero-value fields keep the
// all-green setup.
type spec struct {
	LLMBase, Model                    string
	TelegramURL, SlackURL, DiscordURL string
	Telegram, Slack, Discord          bool
	TelegramMode, WebhookURL          string
	WebhookSecret                     bool
	SlackMode                         string
	Listen                            string
	AdminToken                        bool
	env                               map[string]string
	raw                               string // replaces the whole file when set
	noPersonas, noDB                  bool
	dataDirMode                       os.FileMode
	minFree                           uint64
	prepare                           func(t *testing.T, dir string)
}

var cfgTmpl = template.Must(template.New("cfg").Parse(`# doctor test configuration
bot:
  name: Doctor Test
  data_dir: ./data
llm:
  base_url: ${OPENAI_BASE_URL}
  api_key: ${OPENAI_API_KEY}
  model: {{.Model}}
personas:
  dir: ./personas
channels:
  console: { enabled: true }
  telegram:
    enabled: {{.Telegram}}
    token: ${TELEGRAM_BOT_TOKEN}
    api_url: "{{.TelegramURL}}"
    mode: {{.TelegramMode}}
    webhook_url: "{{.WebhookURL}}"
{{- if .WebhookSecret}}
    webhook_secret: ${TELEGRAM_WEBHOOK_SECRET}
{{- end}}
  slack:
    enabled: {{.Slack}}
    mode: {{.SlackMode}}
    api_url: "{{.SlackURL}}"
  discord:
    enabled: {{.Discord}}
    api_url: "{{.DiscordURL}}"
server:
  listen: "{{.Listen}}"
{{- if .AdminToken}}
  admin_token: ${SWITCHBOARD_ADMIN_TOKEN}
{{- end}}
`))

// green is the all-green spec against f.
func green(f *fakes) spec {
	return spec{
		LLMBase: f.llm.URL, Model: "fake-model",
		TelegramURL: f.telegram.URL(), SlackURL: f.slack.APIURL(), DiscordURL: f.discord.URL(),
		Telegram: true, Slack: true, Discord: true,
		TelegramMode: "polling", SlackMode: "socket", Listen: "127.0.0.1:8787",
		env: map[string]string{
			"OPENAI_API_KEY":          testAPIKey,
			"TELEGRAM_BOT_TOKEN":      f.telegram.Token(),
			"SLACK_BOT_TOKEN":         f.slack.BotToken(),
			"SLACK_APP_TOKEN":         f.slack.AppToken(),
			"SLACK_SIGNING_SECRET":    testSigning,
			"DISCORD_BOT_TOKEN":       testDiscordTok,
			"TELEGRAM_WEBHOOK_SECRET": testWebhookSec,
			"SWITCHBOARD_ADMIN_TOKEN": testAdminToken,
		},
		dataDirMode: 0o700,
		minFree:     1,
	}
}

// install writes the spec's files into a fresh directory and returns the
// Options that check it.
func install(t *testing.T, s spec) Options {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": s.LLMBase}
	for k, v := range s.env {
		env[k] = v
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	var buf bytes.Buffer
	if s.raw != "" {
		buf.WriteString(s.raw)
	} else if err := cfgTmpl.Execute(&buf, s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if !s.noDB {
		st, err := bolt.Open(filepath.Join(data, bolt.FileName), memory.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s.dataDirMode != 0 {
		if err := os.Chmod(data, s.dataDirMode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(data, 0o700) })
	}
	if !s.noPersonas {
		pdir := filepath.Join(dir, "personas")
		if err := os.Mkdir(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		body, ok := personas.DefaultFile(personas.DefaultName)
		if !ok {
			t.Fatal("no embedded default persona")
		}
		if err := os.WriteFile(filepath.Join(pdir, personas.DefaultName+".md"), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s.prepare != nil {
		s.prepare(t, dir)
	}
	return Options{
		ConfigPath:   cfgPath,
		HTTPClient:   &http.Client{},
		Timeout:      3 * time.Second,
		LockTimeout:  100 * time.Millisecond,
		Now:          func() time.Time { return time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC) },
		LookupEnv:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		MinFreeBytes: s.minFree,
	}
}

func run(t *testing.T, opts Options) ([]Result, bool, string) {
	t.Helper()
	var out bytes.Buffer
	results, broken := Run(context.Background(), opts, &out)
	return results, broken, out.String()
}

func find(t *testing.T, results []Result, name string) Result {
	t.Helper()
	for _, r := range results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no %q check in results %+v", name, results)
	return Result{}
}

// openAI401 is an OpenAI-compatible endpoint that rejects every key the way
// api.openai.com does (and, less carefully than OpenAI, echoes the key).
func openAI401(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, key)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// closedPort returns a loopback address nothing listens on: a socket bound
// to it, not listening, holds the port for the test (connecting is refused),
// so another test's server cannot take it in between.
func closedPort(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
