package doctor

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

func TestAllGreen(t *testing.T) {
	t.Parallel()
	f := startFakes(t)
	opts := install(t, green(f))
	results, broken, report := run(t, opts)

	if broken {
		t.Errorf("broken = true for a healthy installation; report:\n%s", report)
	}
	// The platforms' checks come in registry order (internal/platforms).
	want := []string{CheckConfig, CheckDataDir, CheckDatabase, CheckModel, telegram.Name, discord.Name, slack.Name,
		CheckWebhooks, CheckServer, CheckPersonas}
	if len(results) != len(want) {
		t.Fatalf("got %d results, want %d:\n%s", len(results), len(want), report)
	}
	for i, name := range want {
		r := results[i]
		if r.Name != name || r.Status != StatusOK {
			t.Errorf("result %d = %s/%s (%s), want %s/ok", i, r.Name, r.Status, r.Finding, name)
		}
		if !strings.Contains(report, "OK    "+name) {
			t.Errorf("report has no ok line for %q:\n%s", name, report)
		}
	}
	if !strings.Contains(report, "all good") || strings.Contains(report, "fix:") {
		t.Errorf("report of a healthy installation:\n%s", report)
	}
	if !strings.Contains(report, "2025-03-14 09:26:53 UTC") {
		t.Errorf("report header does not use the injected clock:\n%s", report)
	}
	// The checks really asked each platform who the bot is.
	if n := len(f.telegram.Requests("getMe")); n != 1 {
		t.Errorf("telegram getMe calls = %d, want 1", n)
	}
	if n := f.slack.Calls("auth.test"); n != 1 {
		t.Errorf("slack auth.test calls = %d, want 1", n)
	}
	if n := f.slack.Calls("apps.connections.open"); n != 1 {
		t.Errorf("slack apps.connections.open calls = %d, want 1", n)
	}
	if n := f.slack.Connections(); n != 0 {
		t.Errorf("doctor dialed the Socket Mode URL (%d connections)", n)
	}
	var me int
	for _, r := range f.discord.Requests() {
		if r.Path == "/api/v9/users/@me" && r.Authorized {
			me++
		}
	}
	if me != 1 {
		t.Errorf("authorized discord GET /users/@me = %d, want 1 (requests %+v)", me, f.discord.Requests())
	}
	for _, sub := range []string{"@" + f.telegram.Bot().Username, f.slack.BotUserID(), f.discord.BotID(), `"fake-model" is available`} {
		if !strings.Contains(report, sub) {
			t.Errorf("report does not mention %q:\n%s", sub, report)
		}
	}
}

func TestUnwritableDataDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root bypasses permission bits; TestFailures covers a data_dir that is a regular file")
	}
	f := startFakes(t)
	s := green(f)
	s.dataDirMode = 0o500
	results, broken, report := run(t, install(t, s))
	r := find(t, results, CheckDataDir)
	if r.Status != StatusFail || !strings.Contains(r.Finding, "not writable") || !strings.Contains(r.Fix, "chown") {
		t.Errorf("data dir = %+v\n%s", r, report)
	}
	if !broken {
		t.Error("broken = false")
	}
}

func TestConfigMissingUsesDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	llm := fakellm.Start(t, nil)
	env := map[string]string{"OPENAI_BASE_URL": llm.URL, "OPENAI_API_KEY": testAPIKey}
	opts := Options{
		ConfigPath:   filepath.Join(dir, "nope", "config.yaml"),
		Timeout:      3 * time.Second,
		LookupEnv:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		MinFreeBytes: 1,
	}
	results, _, report := run(t, opts)
	r := find(t, results, CheckConfig)
	if r.Status != StatusOK || !strings.Contains(r.Finding, "not found: using the built-in defaults") {
		t.Errorf("config = %+v", r)
	}
	// Defaults: console only, data dir to be created under the config's dir.
	if r := find(t, results, CheckChannels); r.Status != StatusOK || !strings.Contains(r.Finding, "console only") {
		t.Errorf("channels = %+v", r)
	}
	if r := find(t, results, CheckDataDir); r.Status != StatusOK || !strings.Contains(r.Finding, "will be created") {
		t.Errorf("data dir = %+v\n%s", r, report)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Errorf("doctor created directories: %v", err)
	}
	// The configured default model is not what the fake lists.
	if r := find(t, results, CheckModel); r.Status != StatusWarn {
		t.Errorf("model = %+v", r)
	}
}

func TestNoSecretInReport(t *testing.T) {
	t.Parallel()
	f := startFakes(t)
	secrets := []string{testAPIKey, f.telegram.Token(), f.slack.BotToken(), f.slack.AppToken(), testSigning,
		testDiscordTok, testWebhookSec, testAdminToken, wrongTelegram, wrongSlackBot, wrongSlackApp, wrongDiscordTok}

	variants := []func(*spec){
		func(*spec) {}, // all green: findings name bots, URLs, models
		func(s *spec) { // every credential wrong, the model endpoint echoing the key
			s.LLMBase = openAI401(t)
			s.env["TELEGRAM_BOT_TOKEN"] = wrongTelegram
			s.env["SLACK_BOT_TOKEN"] = wrongSlackBot
			s.env["DISCORD_BOT_TOKEN"] = wrongDiscordTok
			s.TelegramMode, s.WebhookURL, s.WebhookSecret = "webhook", "http://x.example/hook", true
			s.SlackMode, s.Listen, s.AdminToken = "http", "0.0.0.0:1", true
		},
		func(s *spec) { // app token rejected
			s.env["SLACK_APP_TOKEN"] = wrongSlackApp
		},
		func(s *spec) { // a secret pasted where a URL belongs: config errors
			s.raw = "llm:\n  base_url: ${OPENAI_API_KEY}\nchannels:\n  discord:\n    enabled: true\n    api_url: ${DISCORD_BOT_TOKEN}\n"
		},
		func(s *spec) { // everything unreachable
			dead := "http://" + closedPort(t)
			s.LLMBase, s.TelegramURL, s.SlackURL, s.DiscordURL = dead+"/v1", dead, dead+"/api/", dead
		},
	}
	for i, mod := range variants {
		s := green(f)
		mod(&s)
		results, _, report := run(t, install(t, s))
		var all strings.Builder
		all.WriteString(report)
		for _, r := range results {
			fmt.Fprintf(&all, "%s|%s|%s|%s\n", r.Name, r.Finding, r.Fix, strings.Join(r.Details, "|"))
		}
		for _, sec := range secrets {
			if strings.Contains(all.String(), sec) {
				t.Errorf("variant %d: secret %q appears in the output:\n%s", i, sec, all.String())
			}
		}
		if i == 1 && !strings.Contains(report, "FAIL") {
			t.Errorf("variant %d should have failures:\n%s", i, report)
		}
	}
}

func TestBrokenAndReport(t *testing.T) {
	t.Parallel()
	results := []Result{
		{Name: "config", Status: StatusOK, Finding: "loaded x"},
		{Name: "model endpoint", Status: StatusWarn, Finding: "slow", Fix: "be patient"},
		{Name: "telegram", Status: StatusFail, Finding: "rejected", Fix: "set TELEGRAM_BOT_TOKEN", Details: []string{"line one"}},
	}
	if !Broken(results) {
		t.Error("Broken = false with a failure")
	}
	if Broken(results[:2]) {
		t.Error("Broken = true with only a warning")
	}
	var b bytes.Buffer
	if err := WriteReport(&b, "c.yaml", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), results); err != nil {
		t.Fatal(err)
	}
	want := `switchboard doctor: c.yaml (2025-01-02 03:04:05 UTC)

  OK    config          loaded x
  WARN  model endpoint  slow
                        fix: be patient
  FAIL  telegram        rejected
                        line one
                        fix: set TELEGRAM_BOT_TOKEN

1 ok, 1 warning, 1 failure: switchboard will not work correctly until the failures are fixed.
`
	if b.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", b.String(), want)
	}
	if err := WriteReport(failWriter{}, "c", time.Now(), results); err == nil {
		t.Error("WriteReport hid a write error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestModelTimeout(t *testing.T) {
	t.Parallel()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; returns when the client gives up
	}))
	t.Cleanup(hang.Close)
	f := startFakes(t)
	s := green(f)
	s.LLMBase = hang.URL + "/v1"
	s.Telegram, s.Slack, s.Discord = false, false, false
	opts := install(t, s)
	opts.Timeout = 150 * time.Millisecond
	results, broken, report := run(t, opts)
	r := find(t, results, CheckModel)
	if r.Status != StatusFail || !strings.Contains(r.Finding, "no answer from "+hang.URL+"/v1 within 150ms") {
		t.Errorf("model = %+v\n%s", r, report)
	}
	if !strings.Contains(r.Fix, "llm.base_url") {
		t.Errorf("fix %q does not name llm.base_url", r.Fix)
	}
	if !broken {
		t.Error("broken = false")
	}
	if c := find(t, results, CheckChannels); c.Status != StatusOK || !strings.Contains(c.Finding, "console only") {
		t.Errorf("channels = %+v", c)
	}
}
