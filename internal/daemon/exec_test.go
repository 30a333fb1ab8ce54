package daemon

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// exec's wiring: the tool is built only when agent.tools enables it; a
// change of exec (or of the workspace bounds its rlimit follows) rebuilds
// the agent and its tools on reload; exec.approval asks except for trusted
// personas; exec.temp_dir wins over /dev/shm.
func TestExecWiring(t *testing.T) {
	cfg := config.Default()
	if tl, err := execTool(cfg, nil); err != nil || tl != nil {
		t.Fatalf("exec built though agent.tools does not list it: %v %v", tl, err)
	}
	cfg.Agent.Tools = append(cfg.Agent.Tools, "exec")
	tl, err := execTool(cfg, nil)
	if err != nil || tl == nil || tl.Name() != "exec" {
		t.Fatalf("exec not built: %v %v", tl, err)
	}
	if ot, ok := tl.(agent.OwnTimeout); !ok || ot.CallTimeout() <= cfg.Exec.Timeout {
		t.Errorf("exec's calls are bounded by agent.tool_timeout, not exec.timeout")
	}

	next := *cfg
	next.Exec.Timeout = 2 * time.Minute
	if !agentChanged(cfg, &next) {
		t.Error("a changed exec.timeout does not rebuild the tools")
	}
	next = *cfg
	next.Workspace.MaxFile = 1 << 20
	if !agentChanged(cfg, &next) {
		t.Error("a changed workspace.max_file does not rebuild the tools")
	}

	cfg.Exec.TrustedPersonas = []string{"coder"}
	rule := execApproval(cfg)
	for _, tt := range []struct {
		tool, persona string
		want          bool
	}{{"exec", "assistant", true}, {"exec", "coder", false}, {"web_fetch", "assistant", false}} {
		if got := rule(tt.tool, agent.CallInfo{Persona: tt.persona}) != ""; got != tt.want {
			t.Errorf("%s as %s needs approval = %v, want %v", tt.tool, tt.persona, got, tt.want)
		}
	}
	cfg.Exec.Approval = false
	if rule := execApproval(cfg); rule("exec", agent.CallInfo{Persona: "assistant"}) != "" {
		t.Error("exec.approval: false still asks")
	}
	cfg.Exec.TempDir = "/var/tmp"
	if got := ExecSandboxOptions(cfg).TempDir; got != "/var/tmp" {
		t.Errorf("temp dir %q", got)
	}
}
