package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/web"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// waitFor bounds a wait for something a test caused (the daemon ready, an
// answer, a reload applied): a hang detector, not a performance bound. Each
// takes well under a second on a quiet machine, a few on a loaded one.
const waitFor = time.Minute

// liveDaemon is a running daemon on a config file in a temp dir, with an
// in-memory channel to talk through.
type liveDaemon struct {
	t    *testing.T
	dir  string
	path string
	d    *Daemon
	mem  *console.Memory
	stop func()
}

const baseConfig = `bot:
  data_dir: ./data
llm:
  base_url: %LLM%
  api_key: test-key
  max_retries: 1
access:
  mode: open
channels:
  console:
    enabled: false
personas:
  dir: ./personas
  default: assistant
server:
  listen: 127.0.0.1:0
`

func startLive(t *testing.T, llm *fakellm.Server, cfgText string, watch bool) *liveDaemon {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeFile(t, path, strings.ReplaceAll(cfgText, "%LLM%", llm.URL))
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	mem := console.NewMemory("memory", 4000, time.Millisecond)
	d, err := New(context.Background(), Options{Config: cfg, Channels: []channels.Channel{mem},
		HTTPClient: llm.HTTPClient(), NoWatch: !watch, WatchDebounce: 20 * time.Millisecond,
		RestartBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("new daemon: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	select {
	case <-d.Ready():
	case <-time.After(waitFor):
		t.Fatal("daemon not ready")
	}
	mem.Attach(d.Handler()) // Run attaches it too; don't race the supervisor
	l := &liveDaemon{t: t, dir: dir, path: path, d: d, mem: mem}
	l.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
	t.Cleanup(l.stop)
	return l
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ask sends text from user in a direct chat and returns the n-th reply there.
func (l *liveDaemon) ask(chat, user, text string, n int) string {
	l.t.Helper()
	if err := l.mem.Say(context.Background(), channels.Message{ChatID: chat, Direct: true,
		Sender: channels.Sender{ID: user, Name: user}, Text: text}); err != nil {
		l.t.Fatalf("say: %v", err)
	}
	got := l.mem.WaitSent(l.t, "memory:"+chat, n, waitFor)
	return got[n-1].Text
}

func systemPromptOf(llm *fakellm.Server) string { return llm.LastRequest().SystemPrompt() }

func TestReloadValidEditChangesPersonaOfNextTurn(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	l := startLive(t, llm, baseConfig, false)
	l.ask("c1", "ann", "hi", 1)
	if sp := systemPromptOf(llm); strings.Contains(sp, "You are Buddy") {
		t.Fatalf("buddy before the edit:\n%s", sp)
	}
	old, _ := os.ReadFile(l.path)
	writeFile(t, l.path, strings.Replace(string(old), "default: assistant", "default: buddy", 1))
	res, err := l.d.Reload(context.Background(), "test")
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if !strings.Contains(res.String(), "personas") {
		t.Fatalf("reload result %q does not mention personas", res)
	}
	l.ask("c1", "ann", "and now?", 2)
	if sp := systemPromptOf(llm); !strings.Contains(sp, "You are Buddy") {
		t.Fatalf("the next turn did not use the new default persona:\n%s", sp)
	}
}

func TestReloadRejectsInvalidEditAndKeepsServing(t *testing.T) {
	cases := []struct {
		name, edit, want string
	}{
		{"bad yaml", "access:\n  mode: [open\n", "config.yaml:"},
		{"unknown key", "log:\n  levl: debug\n", `unknown key "levl"`},
		{"bad cron", "heartbeat:\n  schedule: \"every tuesday\"\n", "heartbeat.schedule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Echo())
			l := startLive(t, llm, baseConfig, false)
			before := l.d.config()
			good, _ := os.ReadFile(l.path)
			writeFile(t, l.path, string(good)+tc.edit)
			_, err := l.d.Reload(context.Background(), "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "config.yaml:") {
				t.Fatalf("reload error = %v; want file:line and %q", err, tc.want)
			}
			if l.d.config() != before {
				t.Fatal("the running config was replaced by a rejected one")
			}
			if got := l.ask("c1", "ann", "still there?", 1); got != "echo: still there?" {
				t.Fatalf("after a rejected edit: %q", got)
			}
			// The admin is told (root has no chat in this test; the audit has it).
			recs, _ := l.d.Store().ListAudit(context.Background(), memoryFilter())
			if len(recs) == 0 || recs[0].Action != "config.reload" || recs[0].Error == "" {
				t.Fatalf("rejected reload not audited: %+v", recs)
			}
		})
	}
}

func TestEditorRenameWriteIsPickedUp(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	l := startLive(t, llm, baseConfig, true)
	l.ask("c1", "ann", "hi", 1)
	old, _ := os.ReadFile(l.path)
	tmp := filepath.Join(l.dir, ".config.yaml.swp")
	writeFile(t, tmp, strings.Replace(string(old), "default: assistant", "default: buddy", 1))
	if err := os.Rename(tmp, l.path); err != nil { // how vim and many editors save
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitFor)
	for l.d.config().Personas.Default != "buddy" {
		if time.Now().After(deadline) {
			t.Fatal("the renamed config.yaml was not picked up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.ask("c1", "ann", "again", 2)
	if sp := systemPromptOf(llm); !strings.Contains(sp, "You are Buddy") {
		t.Fatal("persona not live after the watched edit")
	}
}

func TestReloadRestartsOnlyTheChangedChannel(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	tg := faketelegram.New(t, faketelegram.Options{})
	sl := fakeslack.New(t, fakeslack.Options{})
	t.Setenv("TG_TOKEN", tg.Token())
	t.Setenv("SL_BOT", sl.BotToken())
	t.Setenv("SL_APP", sl.AppToken())
	cfgText := strings.Replace(baseConfig, "channels:\n  console:\n    enabled: false\n", `channels:
  console:
    enabled: false
  telegram:
    enabled: true
    token: ${TG_TOKEN}
    api_url: `+tg.URL()+`
    edit_interval: 10ms
  slack:
    enabled: true
    bot_token: ${SL_BOT}
    app_token: ${SL_APP}
    api_url: `+sl.APIURL()+`
`, 1)
	l := startLive(t, llm, cfgText, false)
	sl.WaitConnections(t, 1, waitFor)
	tg.WaitRequests(t, "getMe", 1, waitFor)
	old, _ := os.ReadFile(l.path)
	writeFile(t, l.path, strings.Replace(string(old), "edit_interval: 10ms", "edit_interval: 20ms", 1))
	res, err := l.d.Reload(context.Background(), "test")
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if strings.Join(res.Restarted, ",") != "telegram" {
		t.Fatalf("restarted %v, want only telegram", res.Restarted)
	}
	tg.WaitRequests(t, "getMe", 2, waitFor) // the new telegram adapter connected
	if n := sl.Connections(); n != 1 {
		t.Fatalf("slack connected %d times; its connection must be untouched", n)
	}
	tg.UserSays(42, "hello after reload")
	got := tg.WaitSent(t, 42, 1, waitFor)
	if !strings.Contains(got[0].Text, "echo: hello after reload") {
		t.Fatalf("telegram after restart answered %q", got[0].Text)
	}
}

func TestMetricsMoveAfterConversation(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	l := startLive(t, llm, baseConfig, false)
	l.ask("c1", "ann", "count me", 1)
	scrape := func() string {
		resp, err := http.Get("http://" + l.d.Addr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// Counters are updated right after the platform call returns: poll briefly.
	body := scrape()
	for deadline := time.Now().Add(waitFor); !strings.Contains(body, "switchboard_messages_out_total") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		body = scrape()
	}
	for _, want := range []string{
		`switchboard_messages_in_total{channel="memory"} 1`,
		`switchboard_messages_out_total{channel="memory"} 1`,
		`switchboard_turns_total{channel="memory",finish="final"} 1`,
		`switchboard_model_calls_total{endpoint="primary",model="gpt-4o-mini",outcome="ok"} 1`,
		`switchboard_turn_duration_seconds_count{channel="memory"} 1`,
		`switchboard_queue_depth 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestMetricsNameNoToolTheModelInvented: a tool name is the model's text,
// and a chat can make the model call any name; each unknown one became a
// series of switchboard_tool_calls_total that lived as long as the process
// (unbounded, at any length). Calls of unknown tools count under
// tool="unknown".
func TestMetricsNameNoToolTheModelInvented(t *testing.T) {
	invented := []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}
	for i := range 20 {
		invented = append(invented, fakellm.ToolCall{Name: fmt.Sprintf("invented_%d_%s", i, strings.Repeat("x", 200)), Arguments: `{}`})
	}
	llm := fakellm.Start(t, fakellm.Match(
		fakellm.Rule{When: fakellm.AfterToolResult, Respond: fakellm.Reply(fakellm.Response{Content: "done"})},
		fakellm.Rule{Respond: fakellm.Reply(fakellm.Response{ToolCalls: invented})},
	))
	l := startLive(t, llm, baseConfig, false)
	l.ask("c1", "ann", "call whatever you like", 1)
	resp, err := http.Get("http://" + l.d.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	if strings.Contains(body, "invented_") {
		t.Errorf("/metrics names the tools the model invented:\n%s", body)
	}
	for _, want := range []string{`switchboard_tool_calls_total{tool="current_time"} 1`,
		`switchboard_tool_calls_total{tool="unknown"} 20`, `switchboard_tool_errors_total{tool="unknown"} 20`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestReadyzAndStatusEndpoint(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	l := startLive(t, llm, baseConfig, false)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + l.d.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Channels connect just after Ready: readyz turns 200 once they have.
	code, body := get("/readyz")
	for deadline := time.Now().Add(waitFor); code != 200 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		code, body = get("/readyz")
	}
	if code != 200 {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	code, body = get("/admin/status")
	if code != 200 || !strings.Contains(body, "model: gpt-4o-mini") || strings.Contains(body, "test-key") {
		t.Fatalf("/admin/status = %d %s", code, body)
	}
}

// A reload that changes what is read only at start says a restart is
// needed, naming the key, instead of leaving the old setting in force
// silently.
func TestRestartNeededNamesStartOnlyKeys(t *testing.T) {
	tests := []struct {
		key  string
		edit func(*config.Config)
	}{
		{"server.listen", func(c *config.Config) { c.Server.Listen = "127.0.0.1:9" }},
		{"bot.data_dir", func(c *config.Config) { c.Bot.DataDir = "/elsewhere" }},
		{"bot.name", func(c *config.Config) { c.Bot.Name = "Other" }},
		{"personas.dir", func(c *config.Config) { c.Personas.Dir = "/elsewhere" }},
		{"server.ui", func(c *config.Config) { c.Server.UI = !c.Server.UI }},
		{"channels.web.enabled", func(c *config.Config) { web.ConfigIn(c.Channels).Enabled = !web.ConfigIn(c.Channels).Enabled }},
		{"channels.console.enabled", func(c *config.Config) { console.ConfigIn(c.Channels).Enabled = !console.ConfigIn(c.Channels).Enabled }},
		{"log.format", func(c *config.Config) { c.Log.Format = "json" }},
	}
	for _, tt := range tests {
		old, next := config.Default(), config.Default()
		old.Log.Format = "text"
		next.Log.Format = "text"
		tt.edit(next)
		if got := restartNeeded(old, next); len(got) != 1 || got[0] != tt.key {
			t.Errorf("changing %s: restart needed for %v, want [%s]", tt.key, got, tt.key)
		}
	}
	if got := restartNeeded(config.Default(), config.Default()); len(got) != 0 {
		t.Errorf("no change: restart needed for %v", got)
	}
}
