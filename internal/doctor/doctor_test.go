package doctor

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

func TestAllGreen(t *testing.T) {
	t.Parallel()
	f := startFakes(t)
	opts := install(t, green(f))
	results, broken, report := run(t, opts)

	if broken {
		t.Errorf("broken = true for a healthy installation; report:\n%s", report)
	}
	want := []string{CheckConfig, CheckDataDir, CheckDatabase, CheckModel, CheckTelegram, CheckSlack, CheckDiscord,
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

func TestFailures(t *testing.T) {
	t.Parallel()
	f := startFakes(t)
	dead := closedPort(t)

	cases := []struct {
		name       string
		mod        func(*spec)
		check      string
		status     Status
		finding    []string
		fix        []string
		details    []string
		wantBroken bool
		alsoSkip   string // a check that must be skipped as a consequence
	}{
		{
			name: "bad config shows file and line",
			mod: func(s *spec) {
				s.raw = "bot:\n  name: x\n  data_dri: ./data\nllm:\n  max_tokens: lots\n"
			},
			check: CheckConfig, status: StatusFail,
			finding:    []string{"config.yaml has 2 problems"},
			fix:        []string{"correct", "config.yaml"},
			details:    []string{"config.yaml:3:", "data_dri", "config.yaml:5:", "llm.max_tokens"},
			wantBroken: true,
		},
		{
			name: "data dir is a regular file",
			mod: func(s *spec) {
				s.noDB, s.dataDirMode = true, 0
				s.prepare = func(t *testing.T, dir string) {
					d := filepath.Join(dir, "data")
					if err := os.RemoveAll(d); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(d, []byte("not a dir"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			},
			check: CheckDataDir, status: StatusFail,
			finding:    []string{"is a regular file, not a directory"},
			fix:        []string{"bot.data_dir must name a directory", "mv "},
			wantBroken: true,
			alsoSkip:   CheckDatabase,
		},
		{
			name:  "data dir readable by others",
			mod:   func(s *spec) { s.dataDirMode = 0o755 },
			check: CheckDataDir, status: StatusWarn,
			finding: []string{"mode 755", "holds conversations"},
			fix:     []string{"chmod 700 "},
		},
		{
			name:  "data dir world-writable",
			mod:   func(s *spec) { s.dataDirMode = 0o777 },
			check: CheckDataDir, status: StatusFail,
			finding:    []string{"world-writable"},
			fix:        []string{"chmod 700 "},
			wantBroken: true,
		},
		{
			name:  "low disk space",
			mod:   func(s *spec) { s.minFree = 1 << 62 },
			check: CheckDataDir, status: StatusWarn,
			finding: []string{"free on its filesystem"},
			fix:     []string{"free disk space"},
		},
		{
			name: "corrupt database",
			mod: func(s *spec) {
				s.noDB = true
				s.prepare = func(t *testing.T, dir string) {
					junk := bytes.Repeat([]byte("this is not a bolt database "), 1024)
					if err := os.WriteFile(filepath.Join(dir, "data", bolt.FileName), junk, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			},
			check: CheckDatabase, status: StatusFail,
			finding:    []string{"switchboard.db is damaged or not a switchboard database"},
			fix:        []string{"move the file aside", "restore it from a backup", ".corrupt-20250314"},
			wantBroken: true,
		},
		{
			name: "damaged pages behind intact meta pages",
			mod: func(s *spec) {
				s.prepare = func(t *testing.T, dir string) {
					path := filepath.Join(dir, "data", bolt.FileName)
					fh, err := os.OpenFile(path, os.O_RDWR, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer fh.Close()
					fi, err := fh.Stat()
					if err != nil {
						t.Fatal(err)
					}
					// Keep the two meta pages and the freelist; scribble over the rest.
					const keep = 3 * 4096
					if fi.Size() <= keep {
						t.Fatalf("database only %d bytes", fi.Size())
					}
					if _, err := fh.WriteAt(bytes.Repeat([]byte{0xA5}, int(fi.Size()-keep)), keep); err != nil {
						t.Fatal(err)
					}
				}
			},
			check: CheckDatabase, status: StatusFail,
			finding:    []string{"is damaged or not a switchboard database"},
			fix:        []string{"move the file aside", "restore it from a backup"},
			wantBroken: true,
		},
		{
			name: "consistency check finds a damaged page",
			mod: func(s *spec) {
				s.noDB = true
				s.prepare = func(t *testing.T, dir string) {
					path := filepath.Join(dir, "data", bolt.FileName)
					st, err := bolt.Open(path, memory.Options{NoSync: true})
					if err != nil {
						t.Fatal(err)
					}
					// Large values give the kv bucket pages of its own, which
					// only a walk of the whole file reads (Open's check does).
					marker := bytes.Repeat([]byte("doctor-marker-"), 200)
					for i := range 4 {
						if err := st.KVPut(context.Background(), fmt.Sprintf("k%d", i), marker); err != nil {
							t.Fatal(err)
						}
					}
					if err := st.Close(); err != nil {
						t.Fatal(err)
					}
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					at := bytes.Index(data, marker)
					if at < 0 {
						t.Fatal("marker not found in the file")
					}
					page := at / 4096 * 4096
					// Page header: id (8 bytes), flags (2): make the type invalid.
					data[page+8], data[page+9] = 0xff, 0xff
					if err := os.WriteFile(path, data, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			},
			check: CheckDatabase, status: StatusFail,
			finding: []string{"is damaged or not a switchboard database"},
			fix:     []string{"move the file aside"},
			// memory.Open runs the same check now, so the problem comes from it.
			details:    []string{"unexpected type", "page"},
			wantBroken: true,
		},
		{
			name: "database in use by a running daemon",
			mod: func(s *spec) {
				s.prepare = func(t *testing.T, dir string) {
					st, err := bolt.Open(filepath.Join(dir, "data", bolt.FileName), memory.Options{NoSync: true})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = st.Close() })
				}
			},
			check: CheckDatabase, status: StatusWarn,
			finding: []string{"locked by a running switchboard", "daemon is running", "skipped"},
			fix:     []string{"stop the daemon"},
		},
		{
			name:  "database not created yet",
			mod:   func(s *spec) { s.noDB = true },
			check: CheckDatabase, status: StatusOK,
			finding: []string{"will be created"},
		},
		{
			name:  "model 401",
			mod:   func(s *spec) { s.LLMBase = openAI401(t) },
			check: CheckModel, status: StatusFail,
			finding:    []string{"the model endpoint rejected the API key", "HTTP 401"},
			fix:        []string{"set OPENAI_API_KEY"},
			wantBroken: true,
		},
		{
			name:  "model unreachable",
			mod:   func(s *spec) { s.LLMBase = "http://" + dead + "/v1" },
			check: CheckModel, status: StatusFail,
			finding:    []string{"cannot connect to http://" + dead + "/v1", "connection refused"},
			fix:        []string{"llm.base_url"},
			wantBroken: true,
		},
		{
			name: "no key and the default OpenAI endpoint",
			mod: func(s *spec) {
				s.LLMBase = ""
				delete(s.env, "OPENAI_API_KEY")
			},
			check: CheckModel, status: StatusFail,
			finding:    []string{"llm.api_key is empty", "OpenAI"},
			fix:        []string{"set OPENAI_API_KEY", "OPENAI_BASE_URL"},
			wantBroken: true,
		},
		{
			name:  "configured model not listed",
			mod:   func(s *spec) { s.Model = "gpt-4o-mini" },
			check: CheckModel, status: StatusWarn,
			finding: []string{`"gpt-4o-mini" is not among the 1 models`},
			fix:     []string{"fake-model"},
		},
		{
			name:  "telegram bad token",
			mod:   func(s *spec) { s.env["TELEGRAM_BOT_TOKEN"] = wrongTelegram },
			check: CheckTelegram, status: StatusFail,
			finding:    []string{"rejected the bot token"},
			fix:        []string{"TELEGRAM_BOT_TOKEN"},
			wantBroken: true,
		},
		{
			name:  "telegram unreachable",
			mod:   func(s *spec) { s.TelegramURL = "http://" + dead },
			check: CheckTelegram, status: StatusFail,
			finding:    []string{"cannot connect to http://" + dead, "connection refused"},
			fix:        []string{"channels.telegram.api_url"},
			wantBroken: true,
		},
		{
			name:  "slack invalid_auth",
			mod:   func(s *spec) { s.env["SLACK_BOT_TOKEN"] = wrongSlackBot },
			check: CheckSlack, status: StatusFail,
			finding:    []string{"rejected the bot token", "invalid_auth"},
			fix:        []string{"SLACK_BOT_TOKEN"},
			wantBroken: true,
		},
		{
			name:  "slack app token rejected",
			mod:   func(s *spec) { s.env["SLACK_APP_TOKEN"] = wrongSlackApp },
			check: CheckSlack, status: StatusFail,
			finding:    []string{"auth.test", "rejected the app-level token", "apps.connections.open answered invalid_auth"},
			fix:        []string{"SLACK_APP_TOKEN", "connections:write"},
			wantBroken: true,
		},
		{
			name:  "discord 401",
			mod:   func(s *spec) { s.env["DISCORD_BOT_TOKEN"] = wrongDiscordTok },
			check: CheckDiscord, status: StatusFail,
			finding:    []string{"rejected the bot token", "HTTP 401"},
			fix:        []string{"DISCORD_BOT_TOKEN"},
			wantBroken: true,
		},
		{
			name: "telegram webhook mode without https",
			mod: func(s *spec) {
				s.TelegramMode, s.WebhookURL, s.WebhookSecret = "webhook", "http://bot.example.com/telegram", true
			},
			check: CheckWebhooks, status: StatusFail,
			finding:    []string{"http://bot.example.com/telegram is not https"},
			fix:        []string{"https://", "channels.telegram.webhook_url"},
			wantBroken: true,
		},
		{
			name: "telegram webhook without secret",
			mod: func(s *spec) {
				s.TelegramMode, s.WebhookURL = "webhook", "https://bot.example.com/telegram"
			},
			check: CheckWebhooks, status: StatusWarn,
			finding: []string{"webhook_url is https", "webhook_secret is empty"},
			fix:     []string{"channels.telegram.webhook_secret"},
		},
		{
			name: "slack http mode",
			mod: func(s *spec) {
				s.SlackMode = "http"
			},
			check: CheckWebhooks, status: StatusOK,
			finding: []string{"slack signing secret is set"},
		},
		{
			name:  "public listener without admin token",
			mod:   func(s *spec) { s.Listen = "0.0.0.0:8787" },
			check: CheckServer, status: StatusWarn,
			finding: []string{"0.0.0.0:8787 accepts connections from other hosts", "admin_token is empty"},
			fix:     []string{"server.admin_token"},
		},
		{
			name:  "public listener with admin token",
			mod:   func(s *spec) { s.Listen, s.AdminToken = ":8787", true },
			check: CheckServer, status: StatusOK,
			finding: []string{"reachable from other hosts"},
		},
		{
			name:  "personas dir missing",
			mod:   func(s *spec) { s.noPersonas = true },
			check: CheckPersonas, status: StatusWarn,
			finding: []string{"does not exist", "written there on first run"},
			fix:     []string{"personas.dir"},
		},
		{
			name: "persona file malformed",
			mod: func(s *spec) {
				s.prepare = func(t *testing.T, dir string) {
					bad := "---\ndescription: x\ncolour: red\n---\nYou are broken.\n"
					if err := os.WriteFile(filepath.Join(dir, "personas", "broken.md"), []byte(bad), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			},
			check: CheckPersonas, status: StatusWarn,
			finding: []string{"1 persona (assistant)", "1 file could not be loaded"},
			fix:     []string{"fix the files"},
			details: []string{"broken.md"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := green(f)
			tc.mod(&s)
			results, broken, report := run(t, install(t, s))
			r := find(t, results, tc.check)
			if r.Status != tc.status {
				t.Errorf("%s status = %s, want %s\nreport:\n%s", tc.check, r.Status, tc.status, report)
			}
			for _, sub := range tc.finding {
				if !strings.Contains(r.Finding, sub) {
					t.Errorf("%s finding %q lacks %q", tc.check, r.Finding, sub)
				}
			}
			for _, sub := range tc.fix {
				if !strings.Contains(r.Fix, sub) {
					t.Errorf("%s fix %q lacks %q", tc.check, r.Fix, sub)
				}
			}
			all := strings.Join(r.Details, "\n")
			for _, sub := range tc.details {
				if !strings.Contains(all, sub) {
					t.Errorf("%s details %q lack %q", tc.check, all, sub)
				}
			}
			if broken != tc.wantBroken {
				t.Errorf("broken = %v, want %v\nreport:\n%s", broken, tc.wantBroken, report)
			}
			if tc.status != StatusOK && !strings.Contains(report, "fix: "+r.Fix) {
				t.Errorf("report does not print the fix %q:\n%s", r.Fix, report)
			}
			// Only the check under test deviates from green (a config error
			// skips the rest instead).
			for _, o := range results {
				if o.Name == tc.check {
					continue
				}
				want := StatusOK
				if tc.check == CheckConfig {
					want = StatusSkip
				}
				if o.Name == tc.alsoSkip {
					want = StatusSkip
				}
				if o.Status != want {
					t.Errorf("unrelated check %s = %s (%s), want %s", o.Name, o.Status, o.Finding, want)
				}
			}
		})
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
