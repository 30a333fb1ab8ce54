package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"syscall"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/sandbox"
	"github.com/switchboard-bot/switchboard/memory"
)

// The exec tool (issue 31; agent/tools/exec.go over internal/sandbox) is
// built from the exec section when agent.tools enables it, with the tool
// registry, so a reload that changes exec rebuilds it (agentChanged).
// exec.sandbox: none logs a warning each time such a runner is built: at
// every start and at every reload that rebuilds the tools. Approval: with
// exec.approval on (the default), every exec call in a chat waits for
// /approve unless the turn's persona is in exec.trusted_personas; a job's
// exec runs only when the job lists exec in its approve list (ApprovalPolicy
// denies it otherwise, with that reason).

// execTool is the exec tool of cfg, nil when agent.tools does not enable it.
func execTool(cfg *config.Config, log *slog.Logger) (agent.Tool, error) {
	if !slices.Contains(cfg.Agent.Tools, tools.NameExec) {
		return nil, nil
	}
	runner, err := execRunner(cfg, log)
	if err != nil {
		return nil, err
	}
	return tools.NewExec(tools.ExecOptions{Runner: runner, Network: cfg.Exec.Network,
		MaxOutput: cfg.Agent.ObservationMaxLen, MaxRunning: cfg.Exec.MaxRunning}), nil
}

// execRunner is the sandbox of the exec section. It never fails for a
// missing bubblewrap: the tool refuses then, saying what to install.
func execRunner(cfg *config.Config, log *slog.Logger) (*sandbox.Runner, error) {
	o := ExecSandboxOptions(cfg)
	o.Logger = log
	r, err := sandbox.New(o)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return r, nil
}

// ExecSandboxOptions are the sandbox options of cfg's exec section (the
// doctor's check builds the same sandbox).
func ExecSandboxOptions(cfg *config.Config) sandbox.Options {
	e := cfg.Exec
	return sandbox.Options{
		Mode: e.Sandbox, Network: e.Network, Timeout: e.Timeout, CPU: e.CPU, Memory: int64(e.Memory),
		FileSize: int64(cfg.Workspace.MaxFile), MaxProcesses: e.MaxProcesses, MaxOutput: int(e.MaxOutput),
		TempDir: execTempDir(e),
	}
}

// execTempDir is where the commands' workspace copies are made:
// exec.temp_dir, else /dev/shm when it is a writable directory (a tmpfs:
// materializing and reading back 1,000 files there is about ten times
// faster than on a journaled disk), else the system's temporary directory.
func execTempDir(e config.Exec) string {
	if e.TempDir != "" {
		return e.TempDir
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && syscall.Access("/dev/shm", 0o3) == nil /* W_OK|X_OK */ {
		return "/dev/shm"
	}
	return ""
}

// execApproval is the approval rule of exec.approval for ApprovalPolicy.Also.
func execApproval(cfg *config.Config) func(name string, info agent.CallInfo) string {
	e := cfg.Exec
	return func(name string, info agent.CallInfo) string {
		if name != tools.NameExec || !e.Approval || slices.Contains(e.TrustedPersonas, info.Persona) {
			return ""
		}
		return "exec.approval is on"
	}
}

// workspaceOf is the store's workspace (the file tools' and exec's), nil
// when the store keeps no files. (Wiring of agent/workspace.go; exec needs
// it.)
func workspaceOf(s agent.Sessions) agent.WorkspaceStore {
	if ws, ok := s.(agent.WorkspaceStore); ok {
		return ws
	}
	return nil
}

// workspaceLimits are the workspace section's bounds; the agent is rebuilt
// when they change (agentChanged).
func workspaceLimits(cfg *config.Config) func() memory.WorkspaceLimits {
	w := cfg.Workspace
	l := memory.WorkspaceLimits{MaxBytes: int64(w.MaxBytes), MaxFiles: w.MaxFiles, MaxFile: int64(w.MaxFile)}
	return func() memory.WorkspaceLimits { return l }
}
