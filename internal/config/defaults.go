package config

import (
	"time"

	"github.com/switchboard-bot/switchboard/agent/defaults"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
	"github.com/switchboard-bot/switchboard/internal/platforms"
)

const mib = 1 << 20

// Default returns every key's default value (DESIGN §4). It does not read
// the environment. The defaults of behaviour a library owns come from that
// library (agent/defaults for llm.* and agent.* loop bounds,
// heartbeat/schedule for a job's grace); the rest are defined here only.
func Default() *Config { return defaultWith(platforms.Builtin) }

// defaultWith is Default with the platforms of reg.
func defaultWith(reg *platform.Registry) *Config {
	return &Config{
		reg: reg,
		Bot: Bot{
			Name:     "Switchboard",
			DataDir:  "./data",
			Timezone: "Local",
			Admins:   []string{},
		},
		LLM:   defaultLLM(),
		Agent: defaultAgent(),
		Personas: Personas{
			Dir:       "./data/personas", // editable; never the embedded built-ins' source (issue 28)
			Default:   "assistant",
			ByTarget:  map[string]string{},
			ByChannel: map[string]string{},
		},
		Skills: Skills{Dir: "./skills"},
		Access: Access{
			Mode:      "pairing",
			AllowFrom: []string{},
			Groups:    "mention",
		},
		Channels: reg.Defaults(),
		Heartbeat: Heartbeat{
			Enabled:     false,
			Schedule:    "0 * * * *",
			ActiveHours: "09:00-21:00",
			IdleAfter:   4 * time.Hour,
			MaxPerDay:   2,
			Targets:     []string{},
		},
		Jobs: []Job{},
		Server: Server{
			Listen: "127.0.0.1:8787",
			UI:     true,
		},
		Log: Log{Level: "info", Format: "text"},
		Retention: Retention{
			DedupTTL:        168 * time.Hour,
			AuditMaxAge:     2160 * time.Hour,
			AuditMaxRecords: 100000,
			RunsPerJob:      100,
		},
		Storage:   Storage{Backend: "bolt"},
		Cluster:   Cluster{LeaseTTL: 15 * time.Second},
		MCP:       MCP{Servers: map[string]MCPServer{}},
		Tasks:     Tasks{MaxPerChat: 3, MaxRunning: 8, MaxDuration: 30 * time.Minute},
		Workspace: DefaultWorkspace(),
		Exec:      DefaultExec(),
		Media:     DefaultMedia(),
	}
}

func defaultLLM() LLM {
	return LLM{
		Model:        defaults.Model,
		Temperature:  0.7,
		MaxTokens:    4096,
		Timeout:      defaults.Timeout,
		MaxRetries:   defaults.MaxRetries,
		ToolProtocol: defaults.ToolProtocol,

		MaxResponseChars: defaults.MaxResponseChars,
		Fallbacks:        []Fallback{},
		Prices:           map[string]Price{},
	}
}

func defaultAgent() Agent {
	return Agent{
		MaxIterations:      defaults.MaxIterations,
		MaxToolCalls:       defaults.MaxToolCalls,
		ToolRetries:        defaults.ToolRetries,
		ToolRetryDelay:     defaults.ToolRetryDelay,
		ToolTimeout:        defaults.ToolTimeout,
		ObservationMaxLen:  defaults.ObservationMaxLen,
		MaxHistory:         defaults.MaxHistory,
		TokenBudget:        0,
		MaxConcurrentTurns: 128, // ~150 KiB a turn waiting on the network (BENCHMARKS.md, "Issue 35")
		TurnTimeout:        5 * time.Minute,
		MaxMessageChars:    16000,
		MaxTurnChars:       48000,
		MaxAnswerChunks:    8,
		RequireApproval:    []string{},
		ApprovalTimeout:    5 * time.Minute,
		Tools: []string{"current_time", "web_fetch", "memory", "schedule", "send_message", "skill",
			"read_file", "write_file", "edit_file", "list_files", "delete_file"},
		WebFetch: WebFetch{
			AllowDomains: []string{},
			MaxBytes:     mib,
			AllowPrivate: false,
		},
		WebSearch: WebSearch{MaxResults: 5},
	}
}

// defaultJob is what an entry of jobs starts from before the file's keys
// are applied.
func defaultJob() Job {
	return Job{Kind: "task", Misfire: "skip", Grace: schedule.DefaultGrace, DeliverTo: []string{}}
}

// envDefaultsOf are the keys whose default is an environment variable
// reference (DESIGN §4), applied when the key is absent from the file: the
// core ones below and each platform's (channels.<name>.<key>).
func envDefaultsOf(reg *platform.Registry) []envDefault {
	out := append([]envDefault(nil), coreEnvDefaults...)
	for _, d := range reg.All() {
		for _, e := range d.EnvDefaults {
			out = append(out, envDefault{"channels." + d.Name + "." + e.Key, e.Env})
		}
	}
	return out
}

type envDefault struct{ key, env string }

// coreEnvDefaults are the environment-backed keys outside channels.
var coreEnvDefaults = []envDefault{
	{"llm.base_url", "OPENAI_BASE_URL"},
	{"llm.api_key", "OPENAI_API_KEY"},
	{"agent.web_search.api_key", "BRAVE_API_KEY"},
	{"storage.postgres.url", "DATABASE_URL"},
	{"media.transcription.base_url", "TRANSCRIBE_BASE_URL"},
	{"media.transcription.api_key", "TRANSCRIBE_API_KEY"},
}
