package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/platforms"
)

// envOf returns an EnvFunc backed by a map.
func envOf(m map[string]string) EnvFunc {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

var emptyEnv = envOf(nil)

func mustParse(t *testing.T, yaml string, env EnvFunc) *Config {
	t.Helper()
	c, err := Parse("config.yaml", []byte(yaml), env)
	if err != nil {
		t.Fatalf("Parse: %v\ninput:\n%s", err, yaml)
	}
	return c
}

func parseErr(t *testing.T, yaml string, env EnvFunc) string {
	t.Helper()
	_, err := Parse("config.yaml", []byte(yaml), env)
	if err == nil {
		t.Fatalf("Parse succeeded, want an error\ninput:\n%s", yaml)
	}
	return err.Error()
}

// stripSource drops what Parse adds beyond the values.
func stripSource(c *Config) *Config {
	cp := *c
	cp.Path = ""
	cp.src = nil
	cp.digest = ""
	return &cp
}

func TestRepoConfigLoadsAsDefault(t *testing.T) {
	data, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("../../config.yaml", data, emptyEnv)
	if err != nil {
		t.Fatalf("the shipped config.yaml does not load with an empty environment: %v", err)
	}
	if c.Path != "../../config.yaml" {
		t.Errorf("Path = %q", c.Path)
	}
	if got, want := stripSource(c), Default(); !reflect.DeepEqual(got, want) {
		gy, _ := got.RedactedYAML()
		wy, _ := want.RedactedYAML()
		t.Fatalf("config.yaml differs from Default()\nconfig.yaml:\n%s\nDefault():\n%s", gy, wy)
	}
	// Every key of the schema is written in the shipped file.
	for _, k := range leafKeys(reflectTypeOfConfig(), "") {
		if !c.src.present[k] {
			t.Errorf("config.yaml does not mention %s", k)
		}
	}
}

func reflectTypeOfConfig() reflect.Type { return reflect.TypeFor[Config]() }

// leafKeys lists every dotted key of the schema that holds a value
// (lists, maps and jobs count as one key).
func leafKeys(t reflect.Type, prefix string) []string {
	var out []string
	names, index := yamlFields(t)
	for _, n := range names {
		f := t.Field(index[n])
		k := joinKey(prefix, n)
		if f.Type == sectionsType { // each registered platform's section
			for _, d := range platforms.Builtin.All() {
				out = append(out, leafKeys(reflect.TypeOf(d.Section()).Elem(), joinKey(k, d.Name))...)
			}
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type != secretType {
			out = append(out, leafKeys(f.Type, k)...)
			continue
		}
		out = append(out, k)
	}
	return out
}

func TestDefaultEveryKey(t *testing.T) {
	want := map[string]string{
		"bot.name":                          "Switchboard",
		"bot.data_dir":                      "./data",
		"bot.timezone":                      "Local",
		"bot.admins":                        "[]",
		"llm.base_url":                      "",
		"llm.api_key":                       "",
		"llm.model":                         "gpt-4o-mini",
		"llm.temperature":                   "0.7",
		"llm.max_tokens":                    "4096",
		"llm.timeout":                       "2m",
		"llm.max_retries":                   "3",
		"llm.tool_protocol":                 "auto",
		"llm.max_response_chars":            "200000",
		"llm.fallbacks":                     "[]",
		"llm.budget.per_chat_daily_tokens":  "0",
		"llm.budget.daily_tokens":           "0",
		"llm.budget.admins":                 "false",
		"llm.prices":                        "{}",
		"agent.max_iterations":              "25",
		"agent.max_tool_calls":              "25",
		"agent.tool_retries":                "3",
		"agent.tool_retry_delay":            "1s",
		"agent.tool_timeout":                "30s",
		"agent.observation_max_len":         "4000",
		"agent.max_history":                 "40",
		"agent.token_budget":                "0",
		"agent.max_concurrent_turns":        "128",
		"agent.turn_timeout":                "5m",
		"agent.max_message_chars":           "16000",
		"agent.max_turn_chars":              "48000",
		"agent.max_answer_chunks":           "8",
		"agent.require_approval":            "[]",
		"agent.approval_timeout":            "5m",
		"agent.tools":                       "[current_time, web_fetch, memory, schedule, send_message, skill, read_file, write_file, edit_file, list_files, delete_file]",
		"agent.web_fetch.allow_domains":     "[]",
		"agent.web_fetch.max_bytes":         "1048576",
		"agent.web_fetch.allow_private":     "false",
		"agent.web_search.provider":         "",
		"agent.web_search.url":              "",
		"agent.web_search.api_key":          "",
		"agent.web_search.max_results":      "5",
		"skills.dir":                        "./skills",
		"personas.dir":                      "./data/personas",
		"personas.default":                  "assistant",
		"personas.by_target":                "{}",
		"personas.by_channel":               "{}",
		"access.mode":                       "pairing",
		"access.allow_from":                 "[]",
		"access.groups":                     "mention",
		"access.allow_bots":                 "false",
		"channels.console.enabled":          "true",
		"channels.web.enabled":              "true",
		"channels.telegram.enabled":         "false",
		"channels.telegram.token":           "",
		"channels.telegram.api_url":         "",
		"channels.telegram.mode":            "polling",
		"channels.telegram.webhook_url":     "",
		"channels.telegram.webhook_secret":  "",
		"channels.telegram.edit_interval":   "1s",
		"channels.telegram.max_media_bytes": "10485760",
		"channels.discord.enabled":          "false",
		"channels.discord.token":            "",
		"channels.discord.api_url":          "",
		"channels.discord.gateway_url":      "",
		"channels.discord.guilds":           "[]",
		"channels.discord.edit_interval":    "1s",
		"channels.discord.max_media_bytes":  "10485760",
		"channels.slack.enabled":            "false",
		"channels.slack.bot_token":          "",
		"channels.slack.app_token":          "",
		"channels.slack.mode":               "socket",
		"channels.slack.signing_secret":     "",
		"channels.slack.api_url":            "",
		"channels.slack.thread_replies":     "true",
		"channels.slack.edit_interval":      "1s",
		"channels.slack.max_media_bytes":    "10485760",
		"heartbeat.enabled":                 "false",
		"heartbeat.schedule":                "0 * * * *",
		"heartbeat.active_hours":            "09:00-21:00",
		"heartbeat.idle_after":              "4h",
		"heartbeat.max_per_day":             "2",
		"heartbeat.targets":                 "[]",
		"jobs":                              "[]",
		"server.listen":                     "127.0.0.1:8787",
		"server.admin_token":                "",
		"server.ui":                         "true",
		"log.level":                         "info",
		"log.format":                        "text",
		"retention.dedup_ttl":               "168h",
		"retention.audit_max_age":           "2160h",
		"retention.audit_max_records":       "100000",
		"retention.runs_per_job":            "100",
		"storage.backend":                   "bolt",
		"storage.postgres.url":              "",
		"cluster.lease_ttl":                 "15s",
		"workspace.max_bytes":               "50MiB",
		"workspace.max_files":               "1000",
		"workspace.max_file":                "10MiB",
		"channels.discord.shards":           "1",
		"mcp.servers":                       "{}",
		"exec.sandbox":                      "bwrap",
		"exec.network":                      "false",
		"exec.timeout":                      "1m",
		"exec.cpu":                          "30s",
		"exec.memory":                       "512MiB",
		"exec.max_processes":                "64",
		"exec.max_output":                   "64KiB",
		"media.transcription.base_url":      "",
		"media.transcription.api_key":       "",
		"media.transcription.model":         "whisper-1",
		"media.transcription.language":      "",
		"media.speech.base_url":             "",
		"media.speech.api_key":              "",
		"media.speech.model":                "",
		"media.speech.voice":                "",
		"media.max_audio":                   "20MiB",
		"media.max_audio_duration":          "10m",
		"media.max_document_pages":          "200",
		"media.max_upload":                  "25MiB",
		"exec.max_running":                  "4",
		"exec.approval":                     "true",
		"exec.trusted_personas":             "[]",
		"exec.temp_dir":                     "",
		"tasks.max_per_chat":                "3",
		"tasks.max_running":                 "8",
		"tasks.max_duration":                "30m",

		// send pacing (rate.go)
		"channels.telegram.rate.per_chat":       "1",
		"channels.telegram.rate.per_chat_burst": "1",
		"channels.telegram.rate.global":         "30",
		"channels.telegram.rate.global_burst":   "30",
	}
	// A platform this list names no key of (one added after it) has its
	// defaults pinned by its own package: adding a platform edits no test
	// here (internal/platforms' doc).
	listed := map[string]bool{}
	for k := range want {
		if rest, ok := strings.CutPrefix(k, "channels."); ok {
			name, _, _ := strings.Cut(rest, ".")
			listed[name] = true
		}
	}
	keys := leafKeys(reflectTypeOfConfig(), "")
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, "channels."); ok {
			if name, _, _ := strings.Cut(rest, "."); !listed[name] {
				continue
			}
		}
		if _, ok := want[k]; !ok {
			t.Errorf("schema key %s has no expected default in this test", k)
		}
	}
	// The defaults are the same whether built in code or parsed from an
	// empty file with an empty environment.
	parsed := mustParse(t, "", emptyEnv)
	for _, c := range []*Config{Default(), parsed} {
		for k, w := range want {
			got, err := Get(c, k)
			if err != nil {
				t.Errorf("Get(%s): %v", k, err)
				continue
			}
			if got != w {
				t.Errorf("default %s = %q, want %q", k, got, w)
			}
		}
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default() does not validate: %v", err)
	}
	// Defaults are fresh each call: mutating one never leaks into the next.
	d := Default()
	d.Agent.Tools[0] = "mutated"
	d.Personas.ByTarget["x"] = "y"
	if Default().Agent.Tools[0] != "current_time" || len(Default().Personas.ByTarget) != 0 {
		t.Error("Default() shares mutable state between calls")
	}
}

func TestDefaultJobFields(t *testing.T) {
	c := mustParse(t, `
jobs:
  - name: daily
    schedule: "0 9 * * *"
    prompt: Summarize.
    deliver_to: ["telegram:1"]
`, emptyEnv)
	j := c.Jobs[0]
	if j.Kind != "task" || j.Misfire != "skip" || j.Grace != 5*time.Minute || j.Timezone != "" {
		t.Errorf("job defaults = kind %q misfire %q grace %v tz %q", j.Kind, j.Misfire, j.Grace, j.Timezone)
	}
}

func TestLoadMissingFileIsDefaultWithEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("TELEGRAM_BOT_TOKEN", "")
	path := filepath.Join(t.TempDir(), "config.yaml")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != path {
		t.Errorf("Path = %q, want %q", c.Path, path)
	}
	if c.LLM.APIKey.Value() != "sk-from-env" {
		t.Errorf("a missing file must still read OPENAI_API_KEY; got set=%v", c.LLM.APIKey.IsSet())
	}
	c.LLM.APIKey = Secret{}
	if !reflect.DeepEqual(stripSource(c), Default()) {
		t.Error("missing file: values differ from Default()")
	}
}

func TestLoadReadsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(path, []byte("llm:\n  model: llama3\n  temperatur: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+`:3: unknown key "temperatur" in llm (did you mean "temperature"?)`) {
		t.Fatalf("err = %v", err)
	}
	if err := os.WriteFile(path, []byte("llm:\n  model: llama3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || c.LLM.Model != "llama3" {
		t.Fatalf("Load = %v, %v", c, err)
	}
}

func TestEnvExpansion(t *testing.T) {
	env := envOf(map[string]string{
		"MODEL":  "llama3.1",
		"EMPTY":  "",
		"N":      "7",
		"YAMLY":  "x: [1, 2]\n- injected",
		"HOST":   "127.0.0.1",
		"PORT":   "9000",
		"TOKEN1": "tg-123",
	})
	tests := []struct {
		name  string
		yaml  string
		key   string
		want  string
		check func(*Config) bool
	}{
		{"plain var", "llm:\n  model: ${MODEL}\n", "llm.model", "llama3.1", nil},
		{"default unused", "llm:\n  model: ${MODEL:-gpt-4o}\n", "llm.model", "llama3.1", nil},
		{"default when unset", "llm:\n  model: ${NOPE:-gpt-4o}\n", "llm.model", "gpt-4o", nil},
		{"default when empty", "llm:\n  model: ${EMPTY:-gpt-4o}\n", "llm.model", "gpt-4o", nil},
		{"missing optional is empty", "llm:\n  base_url: ${NOPE}\n", "llm.base_url", "", nil},
		{"inside a string", "server:\n  listen: ${HOST}:${PORT}\n", "server.listen", "127.0.0.1:9000", nil},
		{"typed int", "agent:\n  max_iterations: ${N}\n", "agent.max_iterations", "7", nil},
		{"typed int default", "agent:\n  max_history: ${NOPE:-12}\n", "agent.max_history", "12", nil},
		{"typed duration default", "llm:\n  timeout: ${NOPE:-45s}\n", "llm.timeout", "45s", nil},
		{"escaped", "bot:\n  name: $${NOT_A_VAR}\n", "bot.name", "${NOT_A_VAR}", nil},
		{"lone dollar kept", "bot:\n  name: Price $5\n", "bot.name", "Price $5", nil},
		{"value cannot inject YAML", "bot:\n  name: ${YAMLY}\n", "bot.name", "x: [1, 2]\n- injected", nil},
		{"list items", "agent:\n  tools: [\"${T:-memory}\", current_time]\n", "agent.tools", "[memory, current_time]", nil},
		{"secret from env", "channels:\n  telegram:\n    enabled: true\n    token: ${TOKEN1}\n", "", "", func(c *Config) bool {
			return telegram.ConfigIn(c.Channels).Token.Value() == "tg-123"
		}},
		{"env default key absent from file", "llm:\n  model: x\n", "", "", func(c *Config) bool {
			return !c.LLM.APIKey.IsSet()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.yaml, env)
			if tt.check != nil {
				if !tt.check(c) {
					t.Error("check failed")
				}
				return
			}
			got, err := Get(c, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestEnvBackedDefaults(t *testing.T) {
	env := envOf(map[string]string{
		"OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
		"TELEGRAM_BOT_TOKEN": "tg", "DISCORD_BOT_TOKEN": "dc",
		"SLACK_BOT_TOKEN": "xoxb", "SLACK_APP_TOKEN": "xapp", "SLACK_SIGNING_SECRET": "sig",
	})
	c := mustParse(t, "channels:\n  telegram: {enabled: true}\n  discord: {enabled: true}\n  slack: {enabled: true}\n", env)
	got := []string{c.LLM.APIKey.Value(), c.LLM.BaseURL, telegram.ConfigIn(c.Channels).Token.Value(), discord.ConfigIn(c.Channels).Token.Value(),
		slack.ConfigIn(c.Channels).BotToken.Value(), slack.ConfigIn(c.Channels).AppToken.Value(), slack.ConfigIn(c.Channels).SigningSecret.Value()}
	want := []string{"sk-1", "http://127.0.0.1:11434/v1", "tg", "dc", "xoxb", "xapp", "sig"}
	if !slices.Equal(got, want) {
		t.Errorf("env-backed defaults = %v, want %v", got, want)
	}
	// A key written in the file wins over the environment default.
	c = mustParse(t, "llm:\n  api_key: \"\"\n", env)
	if c.LLM.APIKey.IsSet() {
		t.Error("llm.api_key: \"\" in the file must not be replaced by OPENAI_API_KEY")
	}
}

func TestDurations(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		fmt  string
	}{
		{"90s", 90 * time.Second, "1m30s"},
		{"7d", 7 * 24 * time.Hour, "168h"},
		{"1d12h", 36 * time.Hour, "36h"},
		{"1h30m", 90 * time.Minute, "1h30m"},
		{"1.5s", 1500 * time.Millisecond, "1.5s"},
		{"0s", 0, "0s"},
	} {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v", tt.in, got, err)
		}
		if f := FormatDuration(got); f != tt.fmt {
			t.Errorf("FormatDuration(%v) = %q, want %q", got, f, tt.fmt)
		}
	}
	for _, bad := range []string{"", "30", "d", "1.5d", "-1d", "1dx", "99999999999d", "5 min"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", bad)
		}
	}
}

func TestResolvePath(t *testing.T) {
	c := &Config{Path: "/etc/switchboard/config.yaml", Bot: Bot{DataDir: "./data"}}
	if got := c.DBPath(); got != "/etc/switchboard/data/switchboard.db" {
		t.Errorf("DBPath = %q", got)
	}
	if got := c.ResolvePath("/var/lib/sb"); got != "/var/lib/sb" {
		t.Errorf("abs = %q", got)
	}
	c.Path = ""
	if got := c.ResolvePath("./personas"); got != "personas" {
		t.Errorf("no path = %q", got)
	}
}

func TestGet(t *testing.T) {
	c := mustParse(t, `
personas:
  by_target: {"slack:C1:1700000000.000100": reporter}
`+validJobs, emptyEnv)
	tests := []struct{ key, want string }{
		{"llm.model", "gpt-4o-mini"},
		{"channels.telegram.mode", "polling"},
		{"agent.tools", "[current_time, web_fetch, memory, schedule, send_message, skill, read_file, write_file, edit_file, list_files, delete_file]"},
		{"agent.tools.1", "web_fetch"},
		{"agent.tools[2]", "memory"},
		{"personas.by_target.slack:C1:1700000000.000100", "reporter"},
		{"jobs.pay_rent.text", "Pay the rent."},
		{"jobs[0].grace", "1h"},
		{"jobs.1.kind", "reminder"},
		{"jobs.ping.deliver_to", "['console:local']"},
		{"log", "level: info\nformat: text"},
		{"channels.console", "enabled: true"},
	}
	for _, tt := range tests {
		got, err := Get(c, tt.key)
		if err != nil || got != tt.want {
			t.Errorf("Get(%s) = %q, %v; want %q", tt.key, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ key, want string }{
		{"llm.modle", `unknown key "modle" in llm (did you mean "model"?)`},
		{"lm.model", `unknown key "lm" at the top level (did you mean "llm"?)`},
		{"jobs.nightly.prompt", `no job named "nightly"`},
		{"jobs.9", `no item 9 (the list has 4)`},
		{"llm.model.x", `llm.model is a single value; it has no key "x"`},
		{"personas.by_target.telegram:1", `personas.by_target has no entry "telegram:1"`},
		{"agent.tools.first", `list items are addressed by number`},
		{"", `empty key`},
	} {
		_, err := Get(c, tt.key)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Get(%q) error = %v, want %q", tt.key, err, tt.want)
		}
	}
}

func TestRedactedMap(t *testing.T) {
	c := Default()
	c.LLM.APIKey = NewSecret("sk-abc")
	m := c.Redacted()
	llm := m["llm"].(map[string]any)
	if llm["api_key"] != "[redacted]" || llm["model"] != "gpt-4o-mini" || llm["timeout"] != "2m" || llm["max_tokens"] != 4096 || llm["temperature"] != 0.7 {
		t.Errorf("llm = %#v", llm)
	}
	if m["channels"].(map[string]any)["telegram"].(map[string]any)["token"] != "" {
		t.Error("unset secret should render empty")
	}
}

func TestSelfReferencingAliasesFail(t *testing.T) {
	for _, y := range []string{
		"bot: &b {<<: *b}\n",
		"llm: &l {<<: [*l, *l, *l, *l]}\n",
		"agent: &a {tools: *a}\n",
	} {
		got := parseErr(t, y, emptyEnv)
		if !strings.HasPrefix(got, "config.yaml:1: ") {
			t.Errorf("%q: error %q", y, got)
		}
	}
	// Ordinary anchors and merge keys work.
	c := mustParse(t, "channels:\n  discord: &off {enabled: false, edit_interval: 2s}\n  slack: {<<: *off, mode: http}\n", emptyEnv)
	if slack.ConfigIn(c.Channels).EditInterval != 2*time.Second || slack.ConfigIn(c.Channels).Mode != "http" {
		t.Errorf("merge key: slack = %+v", slack.ConfigIn(c.Channels))
	}
}

func TestEmptyishFilesAreDefault(t *testing.T) {
	for _, y := range []string{"", "# only a comment\n", "---\n", "~\n", "bot:\njobs:\n", "channels:\n  telegram:\n"} {
		c := mustParse(t, y, emptyEnv)
		if !reflect.DeepEqual(stripSource(c), Default()) {
			t.Errorf("%q does not give the defaults", y)
		}
	}
}
