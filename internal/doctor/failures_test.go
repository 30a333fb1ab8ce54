package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

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
			check: telegram.Name, status: StatusFail,
			finding:    []string{"rejected the bot token"},
			fix:        []string{"TELEGRAM_BOT_TOKEN"},
			wantBroken: true,
		},
		{
			name:  "telegram unreachable",
			mod:   func(s *spec) { s.TelegramURL = "http://" + dead },
			check: telegram.Name, status: StatusFail,
			finding:    []string{"cannot connect to http://" + dead, "connection refused"},
			fix:        []string{"channels.telegram.api_url"},
			wantBroken: true,
		},
		{
			name:  "slack invalid_auth",
			mod:   func(s *spec) { s.env["SLACK_BOT_TOKEN"] = wrongSlackBot },
			check: slack.Name, status: StatusFail,
			finding:    []string{"rejected the bot token", "invalid_auth"},
			fix:        []string{"SLACK_BOT_TOKEN"},
			wantBroken: true,
		},
		{
			name:  "slack app token rejected",
			mod:   func(s *spec) { s.env["SLACK_APP_TOKEN"] = wrongSlackApp },
			check: slack.Name, status: StatusFail,
			finding:    []string{"auth.test", "rejected the app-level token", "apps.connections.open answered invalid_auth"},
			fix:        []string{"SLACK_APP_TOKEN", "connections:write"},
			wantBroken: true,
		},
		{
			name:  "discord 401",
			mod:   func(s *spec) { s.env["DISCORD_BOT_TOKEN"] = wrongDiscordTok },
			check: discord.Name, status: StatusFail,
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
