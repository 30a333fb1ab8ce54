package config

import (
	"os"
	"strings"
	"testing"
)

// A YAML syntax error anywhere in the file (above server: too) leaves
// ParseLenient what reaches the running daemon: server.listen,
// server.admin_token and bot.data_dir, from the top-level blocks that parse
// on their own (README: read-only commands keep working while the file is
// invalid and the daemon runs).
func TestParseLenientSalvagesEveryBlock(t *testing.T) {
	env := envOf(map[string]string{"SB_ADMIN": "admin-secret"})
	const (
		bot    = "bot:\n  name: B\n  data_dir: ./d\n"
		llm    = "llm:\n  base_url: http://127.0.0.1:1/v1\n  model: m\n  temperature: 0.5\n"
		agent  = "agent:\n  max_iterations: 5\n  tools: [current_time, memory]\n"
		server = "# the admin API\nserver:\n  listen: 127.0.0.1:9990\n  admin_token: ${SB_ADMIN}\n\n"
		tail   = "log:\n  level: info\n"
	)
	repo, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	repoListen := strings.Replace(string(repo), "  listen: 127.0.0.1:8787 ", "  listen: 127.0.0.1:9990 ", 1)
	repoListen = strings.Replace(repoListen, "  data_dir: ./data ", "  data_dir: ./d ", 1)
	repoListen = strings.Replace(repoListen, "${SWITCHBOARD_ADMIN_TOKEN}", "${SB_ADMIN}", 1)
	lines := strings.Split(repoListen, "\n")
	if !strings.HasPrefix(lines[24], "  model:") {
		t.Fatalf("config.yaml line 25 is %q, not llm.model", lines[24])
	}
	lines[24] = "\t" + lines[24]
	repoTab := strings.Join(lines, "\n")

	for _, tt := range []struct{ name, body string }{
		{"tab in llm", bot + strings.Replace(llm, "  model:", "\tmodel:", 1) + agent + server + tail},
		{"unclosed [ in agent", bot + llm + strings.Replace(agent, "memory]", "memory", 1) + server + tail},
		{"garbage at the end", bot + llm + agent + server + tail + "}}} not yaml: [\n"},
		{"garbage at column 0 between blocks", bot + llm + "]]]\n" + agent + server + tail},
		{"broken bot below data_dir", bot + "  admins: [x\n" + llm + server},
		{"broken server below its keys", bot + llm + server + "  ui: [\n" + tail},
		{"two broken blocks", bot + strings.Replace(llm, "  model:", "\tmodel:", 1) + strings.Replace(agent, "memory]", "memory", 1) + server + tail + "\t: x\n"},
		{"repo config.yaml, tab before model: on line 25", repoTab},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if _, err := Parse("c.yaml", []byte(body), env); err == nil || !strings.Contains(err.Error(), "YAML") {
				t.Fatalf("the case is meant to be a YAML syntax error, got %v", err)
			}
			cfg := ParseLenient("c.yaml", []byte(body), env)
			if cfg.Server.Listen != "127.0.0.1:9990" || cfg.Server.AdminToken.Value() != "admin-secret" || cfg.Bot.DataDir != "./d" {
				t.Fatalf("listen %q, admin token set %v, data_dir %q\n%s", cfg.Server.Listen, cfg.Server.AdminToken.IsSet(), cfg.Bot.DataDir, body)
			}
		})
	}
}
