package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/discord"
)

func TestEnvExpansionErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unterminated", "llm:\n  model: ${MODEL\n", `config.yaml:2: llm.model: unterminated "${"`},
		{"bad name", "llm:\n  model: ${MO DEL}\n", `config.yaml:2: llm.model: invalid variable name "MO DEL"`},
		{"int from env not a number", "agent:\n  max_history: ${NOPE:-many}\n", `config.yaml:2: agent.max_history: expected an integer, got "${NOPE:-many}"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.yaml, emptyEnv); !strings.Contains(got, tt.want) {
				t.Errorf("error %q does not contain %q", got, tt.want)
			}
		})
	}
}

func TestMissingRequiredSecret(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"telegram token from default env", "channels:\n  telegram:\n    enabled: true\n",
			"config.yaml:2: channels.telegram.token is empty: set TELEGRAM_BOT_TOKEN (channels.telegram is enabled)"},
		{"telegram token referenced", "channels:\n  console:\n    enabled: true\n  telegram:\n    enabled: true\n    token: ${TELEGRAM_BOT_TOKEN}\n",
			"config.yaml:6: channels.telegram.token is empty: set TELEGRAM_BOT_TOKEN (channels.telegram is enabled)"},
		{"custom variable name", "channels:\n  telegram:\n    enabled: true\n    token: ${MY_TG}\n",
			"config.yaml:4: channels.telegram.token is empty: set MY_TG (channels.telegram is enabled)"},
		{"discord", "channels:\n  discord: {enabled: true, token: \"${DISCORD_BOT_TOKEN}\"}\n",
			"config.yaml:2: channels.discord.token is empty: set DISCORD_BOT_TOKEN (channels.discord is enabled)"},
		{"slack bot token", "channels:\n  slack:\n    enabled: true\n",
			"channels.slack.bot_token is empty: set SLACK_BOT_TOKEN"},
		{"slack socket needs app token", "channels:\n  slack:\n    enabled: true\n    bot_token: xoxb-1\n    app_token: ${SLACK_APP_TOKEN}\n",
			"config.yaml:5: channels.slack.app_token is empty: set SLACK_APP_TOKEN (channels.slack.mode is socket)"},
		{"slack http needs signing secret", "channels:\n  slack:\n    enabled: true\n    bot_token: xoxb-1\n    mode: http\n",
			"config.yaml:2: channels.slack.signing_secret is empty: set SLACK_SIGNING_SECRET (channels.slack.mode is http)"},
		{"literal empty", "channels:\n  telegram:\n    enabled: true\n    token: \"\"\n",
			"config.yaml:4: channels.telegram.token is empty: give it a value, e.g. token: ${TELEGRAM_BOT_TOKEN} (channels.telegram is enabled)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.yaml, emptyEnv); !strings.Contains(got, tt.want) {
				t.Errorf("error:\n  %s\nwant it to contain:\n  %s", got, tt.want)
			}
		})
	}
	// Disabled channels need nothing.
	mustParse(t, "channels:\n  telegram:\n    enabled: false\n    token: ${MISSING}\n", emptyEnv)
}

func TestUnknownKey(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"typo in section", "bot:\n  name: x\nllm:\n  modle: gpt-4o\n", `config.yaml:4: unknown key "modle" in llm (did you mean "model"?)`},
		{"top level", "\n\nlmm:\n  model: x\n", `config.yaml:3: unknown key "lmm" at the top level (did you mean "llm"?)`},
		{"nested", "channels:\n  telegram:\n    enabled: false\n    tokn: x\n", `config.yaml:4: unknown key "tokn" in channels.telegram (did you mean "token"?)`},
		{"flow mapping", "log: {level: info, fromat: json}\n", `config.yaml:1: unknown key "fromat" in log (did you mean "format"?)`},
		{"job", "jobs:\n  - name: a\n    shedule: \"@daily\"\n", `config.yaml:3: unknown key "shedule" in jobs[0] (did you mean "schedule"?)`},
		{"far from everything", "log:\n  colour: red\n", `config.yaml:2: unknown key "colour" in log (known keys: level, format)`},
		{"duplicate", "llm:\n  model: a\n  model: b\n", `config.yaml:3: llm.model is set twice (first on line 2)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.yaml, emptyEnv); !strings.Contains(got, tt.want) {
				t.Errorf("error:\n  %s\nwant it to contain:\n  %s", got, tt.want)
			}
		})
	}
}

func TestWrongType(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"int", "agent:\n  max_iterations: lots\n", `config.yaml:2: agent.max_iterations: expected an integer, got "lots"`},
		{"bool", "channels:\n  console:\n    enabled: maybe\n", `config.yaml:3: channels.console.enabled: expected true or false, got "maybe"`},
		{"duration without unit", "llm:\n  timeout: 30\n", `config.yaml:2: llm.timeout: expected a duration such as 30s, 5m, 4h or 7d, got "30"`},
		{"float", "llm:\n  temperature: warm\n", `config.yaml:2: llm.temperature: expected a number, got "warm"`},
		{"list given a scalar", "agent:\n  tools: memory\n", `config.yaml:2: agent.tools: expected a list, got a scalar`},
		{"section given a list", "bot:\n  - a\n", `config.yaml:2: bot: expected a mapping of keys, got a list`},
		{"string given a mapping", "llm:\n  model:\n    name: x\n", `config.yaml:3: llm.model: expected a string, got a mapping`},
		{"map given a list", "personas:\n  by_target: [a]\n", `config.yaml:2: personas.by_target: expected a mapping (key: value), got a list`},
		{"secret given a list", "llm:\n  api_key: [a]\n", `config.yaml:2: llm.api_key: expected a string, got a list`},
		{"top level scalar", "hello\n", `config.yaml:1: the top level must be a mapping`},
		{"syntax", "llm:\n  model: [gpt\n  x: y\n", `config.yaml:`},
		{"second document", "llm: {}\n---\nbot: {}\n", `a second YAML document is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.yaml, emptyEnv); !strings.Contains(got, tt.want) {
				t.Errorf("error:\n  %s\nwant it to contain:\n  %s", got, tt.want)
			}
		})
	}
}

func TestSyntaxErrorHasLine(t *testing.T) {
	got := parseErr(t, "bot:\n  name: x\n   bad: indent\n", emptyEnv)
	if !strings.HasPrefix(got, "config.yaml:3: invalid YAML: ") {
		t.Errorf("error = %q", got)
	}
}

func TestSeveralErrorsReportedTogether(t *testing.T) {
	got := parseErr(t, "llm:\n  modle: x\nagent:\n  max_iterations: lots\n", emptyEnv)
	for _, w := range []string{"config.yaml:2: unknown key", "config.yaml:4: agent.max_iterations"} {
		if !strings.Contains(got, w) {
			t.Errorf("error %q misses %q", got, w)
		}
	}
	var ce *Error
	_, err := Parse("config.yaml", []byte("llm:\n  modle: x\n"), emptyEnv)
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Key != "llm.modle" {
		t.Errorf("errors.As(*Error) = %+v", ce)
	}
}

const validJobs = `
jobs:
  - name: morning-report
    schedule: "0 9 * * 1-5"
    timezone: Europe/Berlin
    kind: task
    persona: reporter
    prompt: Summarize yesterday.
    deliver_to: ["slack:C0123", "telegram:-100123:7"]
    misfire: run_once
    grace: 1h
  - name: pay_rent
    at: 2030-01-31T09:00:00+01:00
    kind: reminder
    text: Pay the rent.
    deliver_to: [discord:987654321]
  - name: ping
    schedule: "@every 30m"
    prompt: ping
    deliver_to: [console:local]
  - name: seconds
    schedule: "30 0 9 * * *"
    prompt: hi
    deliver_to: [telegram:1]
`

func TestValidConfigAccepted(t *testing.T) {
	c := mustParse(t, `
bot:
  timezone: America/New_York
  admins: ["telegram:user:42", "slack:C0123"]
llm:
  base_url: http://127.0.0.1:11434/v1
  temperature: 0
  tool_protocol: json
agent:
  tool_retries: 0
  token_budget: 20000
  turn_timeout: 1d12h
  web_fetch: {allow_domains: [example.com, docs.go.dev], allow_private: true}
personas:
  by_target: {"slack:C0123:1700000000.000100": reporter}
  by_channel: {discord: buddy}
access: {mode: allowlist, allow_from: ["discord:user:9", "telegram:12345"], groups: all, allow_bots: true}
channels:
  telegram: {enabled: true, token: t, mode: webhook, webhook_url: "https://bot.example.com/tg", api_url: "http://127.0.0.1:8081"}
  discord: {enabled: true, token: d, api_url: "http://127.0.0.1:9001", gateway_url: "ws://127.0.0.1:9001/gw", guilds: ["123"]}
  slack: {enabled: true, bot_token: b, mode: http, signing_secret: s, api_url: "http://127.0.0.1:9002/api/", thread_replies: false}
heartbeat: {enabled: true, schedule: "@hourly", active_hours: "22:00-06:00", targets: ["telegram:1"]}
server: {listen: ":8787"}
log: {level: debug, format: json}
retention: {dedup_ttl: 7d, audit_max_age: 0s, audit_max_records: 0}
`+validJobs, emptyEnv)
	if c.Agent.TurnTimeout != 36*time.Hour {
		t.Errorf("turn_timeout 1d12h = %v", c.Agent.TurnTimeout)
	}
	if c.Retention.DedupTTL != 7*24*time.Hour {
		t.Errorf("dedup_ttl 7d = %v", c.Retention.DedupTTL)
	}
	if loc := c.Bot.Location(); loc.String() != "America/New_York" {
		t.Errorf("Location = %v", loc)
	}
	if len(c.Jobs) != 4 || c.Jobs[1].Kind != "reminder" || c.Jobs[0].Grace != time.Hour {
		t.Errorf("jobs = %+v", c.Jobs)
	}
	if at, ok := c.Jobs[1].AtTime(); !ok || at.UTC().Hour() != 8 {
		t.Errorf("AtTime = %v %v", at, ok)
	}
	if c.Jobs[0].Location(time.UTC).String() != "Europe/Berlin" || c.Jobs[2].Location(time.UTC) != time.UTC {
		t.Error("Job.Location")
	}
	if c.Log.SlogLevel().String() != "DEBUG" {
		t.Error("SlogLevel")
	}
}

func TestSemanticErrors(t *testing.T) {
	job := func(extra string) string {
		return "jobs:\n  - name: j\n    schedule: \"@daily\"\n    prompt: p\n    deliver_to: [telegram:1]\n" + extra
	}
	tests := []struct{ name, yaml, want string }{
		{"timezone", "bot:\n  timezone: Mars/Olympus\n", `config.yaml:2: bot.timezone: unknown time zone "Mars/Olympus"`},
		{"admin address", "bot:\n  admins: [\"bob\"]\n", `config.yaml:2: bot.admins[0]: "bob" is neither a user id`},
		{"base_url", "llm:\n  base_url: localhost:11434\n", `config.yaml:2: llm.base_url: "localhost:11434" must be an absolute http:// or https:// URL`},
		{"base_url hides password", "llm:\n  base_url: \"ftp://user:hunter2@host/v1\"\n", `ftp://user:[redacted]@host/v1`},
		{"temperature", "llm:\n  temperature: 3\n", `config.yaml:2: llm.temperature: must be between 0 and 2, got 3`},
		{"max_tokens", "llm:\n  max_tokens: 0\n", `config.yaml:2: llm.max_tokens: must be a positive integer, got 0`},
		{"timeout", "llm:\n  timeout: -5s\n", `config.yaml:2: llm.timeout: must be a positive duration`},
		{"max_retries", "llm:\n  max_retries: -1\n", `config.yaml:2: llm.max_retries: must be 0 or more, got -1`},
		{"tool_protocol", "llm:\n  tool_protocol: xml\n", `config.yaml:2: llm.tool_protocol: must be one of native | json | auto, got "xml"`},
		{"max_response_chars", "llm:\n  max_response_chars: 999\n", `config.yaml:2: llm.max_response_chars: must be at least 1000, got 999`},
		{"max_response_chars zero", "llm:\n  max_response_chars: 0\n", `config.yaml:2: llm.max_response_chars: must be at least 1000, got 0`},
		{"max_iterations", "agent:\n  max_iterations: 0\n", `config.yaml:2: agent.max_iterations: must be a positive integer`},
		{"max_concurrent_turns", "agent:\n  max_concurrent_turns: -2\n", `agent.max_concurrent_turns: must be a positive integer`},
		{"token_budget", "agent:\n  token_budget: -1\n", `agent.token_budget: must be 0 or more`},
		{"tool name", "agent:\n  tools: [current_time, Web Fetch]\n", `config.yaml:2: agent.tools[1]: tool name "Web Fetch"`},
		{"tool twice", "agent:\n  tools: [memory, memory]\n", `agent.tools[1]: tool "memory" is listed twice`},
		{"allow_domains", "agent:\n  web_fetch:\n    allow_domains: [\"https://x.com\"]\n", `agent.web_fetch.allow_domains[0]: "https://x.com" must be a bare host name`},
		{"web_fetch.max_bytes", "agent:\n  web_fetch: {max_bytes: 0}\n", `agent.web_fetch.max_bytes: must be a positive integer`},
		{"persona default", "personas:\n  default: Assistant\n", `config.yaml:2: personas.default: persona name "Assistant" must use only a-z`},
		{"by_target key", "personas:\n  by_target:\n    slack: reporter\n", `config.yaml:3: personas.by_target.slack: "slack" is not a target`},
		{"by_target channel", "personas:\n  by_target:\n    irc:#go: reporter\n", `unknown channel "irc"`},
		{"by_channel", "personas:\n  by_channel: {irc: buddy}\n", `personas.by_channel.irc: unknown channel "irc"`},
		{"access mode", "access:\n  mode: closed\n", `config.yaml:2: access.mode: must be one of open | allowlist | pairing, got "closed"`},
		{"access groups", "access:\n  groups: some\n", `access.groups: must be one of mention | all | off`},
		{"allow_from", "access:\n  allow_from: [\"telegram:user:\"]\n", `access.allow_from[0]: "telegram:user:" is neither a user id`},
		{"telegram mode", "channels:\n  telegram: {mode: push}\n", `channels.telegram.mode: must be one of polling | webhook, got "push"`},
		{"webhook needs url", "channels:\n  telegram: {enabled: true, token: t, mode: webhook}\n", `channels.telegram.webhook_url is empty: webhook mode needs`},
		{"webhook needs server", "channels:\n  telegram: {enabled: true, token: t, mode: webhook, webhook_url: \"https://x/y\"}\nserver: {listen: \"\"}\n", `server.listen is empty: channels.telegram.mode webhook needs the HTTP server`},
		{"telegram api_url", "channels:\n  telegram: {api_url: \"127.0.0.1:8081\"}\n", `channels.telegram.api_url: "127.0.0.1:8081" must be an absolute`},
		{"discord api_url path", "channels:\n  discord: {api_url: \"http://127.0.0.1:9001/api/v9\"}\n", `channels.discord.api_url: must be scheme, host and port only`},
		{"discord gateway", "channels:\n  discord: {gateway_url: \"http://x\"}\n", `channels.discord.gateway_url: "http://x" must be an absolute ws:// or wss:// URL`},
		{"discord guild", "channels:\n  discord: {guilds: [abc]}\n", `channels.discord.guilds[0]: guild id "abc" must be a numeric snowflake`},
		{"discord shards", "channels:\n  discord: {shards: 0}\n", `channels.discord.shards: must be a positive integer, got 0`},
		{"cluster lease_ttl", "cluster: {lease_ttl: 100ms}\n", `cluster.lease_ttl: 100ms is too short: at least 1s (default 15s)`},
		{"slack mode", "channels:\n  slack: {mode: rtm}\n", `channels.slack.mode: must be one of socket | http, got "rtm"`},
		{"storage backend", "storage:\n  backend: sqlite\n", `config.yaml:2: storage.backend: must be one of bolt | postgres, got "sqlite"`},
		{"storage postgres url", "storage:\n  backend: postgres\n  postgres: {url: \"\"}\n", `storage.postgres.url is empty: give it a value, e.g. url: ${DATABASE_URL} (storage.backend is postgres)`},
		{"slack api_url slash", "channels:\n  slack: {api_url: \"http://127.0.0.1:9002/api\"}\n", `channels.slack.api_url: must end with "/"`},
		{"slack http needs server", "channels:\n  slack: {enabled: true, bot_token: b, mode: http, signing_secret: s}\nserver: {listen: \"\"}\n", `server.listen is empty: channels.slack.mode http needs the HTTP server`},
		{"edit_interval", "channels:\n  slack: {edit_interval: -1s}\n", `channels.slack.edit_interval: must not be negative`},
		{"max_media_bytes", "channels:\n  telegram: {max_media_bytes: -1}\n", `channels.telegram.max_media_bytes: must be 0 or more`},
		{"cron fields", "heartbeat:\n  schedule: \"0 * * *\"\n", `config.yaml:2: heartbeat.schedule: invalid cron spec "0 * * *"`},
		{"cron range", "heartbeat:\n  schedule: \"61 * * * *\"\n", `heartbeat.schedule: invalid cron spec "61 * * * *"`},
		{"cron descriptor", "heartbeat:\n  schedule: \"@sometimes\"\n", `heartbeat.schedule: invalid cron spec "@sometimes"`},
		{"cron TZ prefix", "heartbeat:\n  schedule: \"TZ=UTC\"\n", `heartbeat.schedule: cron spec "TZ=UTC": set the time zone with the timezone key`},
		{"heartbeat enabled empty schedule", "heartbeat: {enabled: true, schedule: \"\"}\n", `heartbeat.schedule is empty: heartbeat is enabled`},
		{"active_hours form", "heartbeat:\n  active_hours: 9-21\n", `config.yaml:2: heartbeat.active_hours: "9-21" must be HH:MM-HH:MM`},
		{"active_hours equal", "heartbeat:\n  active_hours: \"09:00-09:00\"\n", `start and end are equal`},
		{"max_per_day", "heartbeat:\n  max_per_day: 0\n", `heartbeat.max_per_day: must be a positive integer`},
		{"heartbeat target", "heartbeat:\n  targets: [\"irc:x\"]\n", `heartbeat.targets[0]: "irc:x": unknown channel "irc"`},
		{"job name pattern", "jobs:\n  - name: Daily Report\n    schedule: \"@daily\"\n    prompt: p\n    deliver_to: [telegram:1]\n", `config.yaml:2: jobs[0].name: job name "Daily Report" must use only a-z`},
		{"job name empty", "jobs:\n  - schedule: \"@daily\"\n    prompt: p\n    deliver_to: [telegram:1]\n", `config.yaml:2: jobs[0].name is empty`},
		{"job name unique", job("  - name: j\n    schedule: \"@daily\"\n    prompt: p\n    deliver_to: [telegram:1]\n"), `config.yaml:6: jobs[1].name: job name "j" is already used by jobs[0]`},
		{"job schedule xor at both", job("    at: 2030-01-01T00:00:00Z\n"), `config.yaml:6: jobs[0].at: set either schedule or at, not both`},
		{"job schedule xor at none", "jobs:\n  - name: j\n    prompt: p\n    deliver_to: [telegram:1]\n", `config.yaml:2: jobs[0] needs schedule (cron) or at`},
		{"job cron", "jobs:\n  - name: j\n    schedule: \"every day\"\n    prompt: p\n    deliver_to: [telegram:1]\n", `config.yaml:3: jobs[0].schedule: invalid cron spec "every day"`},
		{"job at", "jobs:\n  - name: j\n    at: tomorrow 9am\n    prompt: p\n    deliver_to: [telegram:1]\n", `config.yaml:3: jobs[0].at: "tomorrow 9am" is not an RFC 3339 time`},
		{"job timezone", job("    timezone: Nowhere/Land\n"), `config.yaml:6: jobs[0].timezone: unknown time zone "Nowhere/Land"`},
		{"job kind", job("    kind: alarm\n"), `jobs[0].kind: must be one of task | reminder, got "alarm"`},
		{"task needs prompt", "jobs:\n  - name: j\n    schedule: \"@daily\"\n    deliver_to: [telegram:1]\n", `jobs[0].prompt is empty: a task job needs a prompt`},
		{"reminder needs text", "jobs:\n  - name: j\n    kind: reminder\n    schedule: \"@daily\"\n    deliver_to: [telegram:1]\n", `jobs[0].text is empty: a reminder job needs text`},
		{"job persona", job("    persona: \"Bad Name\"\n"), `jobs[0].persona: persona name "Bad Name"`},
		{"deliver_to empty", "jobs:\n  - name: j\n    schedule: \"@daily\"\n    prompt: p\n    deliver_to: []\n", `config.yaml:5: jobs[0].deliver_to is empty`},
		{"deliver_to address", "jobs:\n  - name: j\n    schedule: \"@daily\"\n    prompt: p\n    deliver_to: [\"telegram\"]\n", `config.yaml:5: jobs[0].deliver_to[0]: "telegram" is not a target`},
		{"deliver_to user id", "jobs:\n  - name: j\n    schedule: \"@daily\"\n    prompt: p\n    deliver_to: [\"telegram:user:42\"]\n", `"telegram:user:42" is not a target`},
		{"misfire", job("    misfire: always\n"), `jobs[0].misfire: must be one of skip | run_once, got "always"`},
		{"grace", job("    grace: -1m\n"), `jobs[0].grace: must not be negative`},
		{"listen", "server:\n  listen: localhost\n", `config.yaml:2: server.listen: "localhost" must be host:port`},
		{"log level", "log: {level: verbose}\n", `config.yaml:1: log.level: must be one of debug | info | warn | error, got "verbose"`},
		{"log format", "log: {format: xml}\n", `log.format: must be one of text | json`},
		{"dedup_ttl", "retention: {dedup_ttl: 0s}\n", `retention.dedup_ttl: must be a positive duration`},
		{"audit_max_records", "retention: {audit_max_records: -5}\n", `retention.audit_max_records: must be 0 or more`},
		{"runs_per_job", "retention: {runs_per_job: 0}\n", `retention.runs_per_job: must be a positive integer`},
		{"bot name", "bot: {name: \"\"}\n", `bot.name: must not be empty`},
		{"model", "llm: {model: \"\"}\n", `llm.model: must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.yaml, emptyEnv); !strings.Contains(got, tt.want) {
				t.Errorf("error:\n  %s\nwant it to contain:\n  %s", got, tt.want)
			}
		})
	}
}

func TestValidateWithoutFile(t *testing.T) {
	c := Default()
	c.Agent.MaxIterations = 0
	discord.ConfigIn(c.Channels).Enabled = true
	err := c.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, w := range []string{"config.yaml: agent.max_iterations: must be a positive integer", "config.yaml: channels.discord.token is empty: set DISCORD_BOT_TOKEN"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q misses %q", err, w)
		}
	}
}
