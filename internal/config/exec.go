package config

import (
	"fmt"
	"path/filepath"
	"time"
)

// Exec is the exec section: how the exec tool runs commands (package
// internal/sandbox; README "Running commands (exec)"). The names of the
// first seven keys are DESIGN §9's.
type Exec struct {
	// Sandbox is "bwrap" (bubblewrap, the default) or "none": commands run
	// unsandboxed as the daemon's user, which logs a warning at every start.
	Sandbox string `yaml:"sandbox"`
	// Network lets commands reach the network (the host's); default off.
	Network bool `yaml:"network"`
	// Timeout is the wall clock one command may take (60s); a call may ask
	// for less, never more.
	Timeout time.Duration `yaml:"timeout"`
	// CPU is the CPU time one command may use (RLIMIT_CPU, 30s).
	CPU time.Duration `yaml:"cpu"`
	// Memory is the address space one process may map (RLIMIT_AS, 512MiB).
	Memory Size `yaml:"memory"`
	// MaxProcesses bounds the processes of one command (RLIMIT_NPROC, 64).
	MaxProcesses int `yaml:"max_processes"`
	// MaxOutput is how much of stdout and of stderr each is kept (64KiB):
	// the head and the tail, the cut marked.
	MaxOutput Size `yaml:"max_output"`
	// Approval: every exec call in a chat waits for /approve (default
	// true). Jobs never wait: their exec runs only when the job lists exec
	// in its approve list.
	Approval bool `yaml:"approval"`
	// TrustedPersonas are personas whose chats run exec without asking
	// even when Approval is on (names; empty = none).
	TrustedPersonas []string `yaml:"trusted_personas"`
	// MaxRunning is how many commands run at once in one process (4);
	// more wait for a slot.
	MaxRunning int `yaml:"max_running"`
	// TempDir is where each command's workspace copy is made; "" = /dev/shm
	// when it is a writable directory (a tmpfs: fast), else the system's
	// temporary directory.
	TempDir string `yaml:"temp_dir"`
}

// DefaultExec is the exec section's defaults (DESIGN.md §9).
func DefaultExec() Exec {
	return Exec{Sandbox: "bwrap", Timeout: 60 * time.Second, CPU: 30 * time.Second, Memory: 512 << 20,
		MaxProcesses: 64, MaxOutput: 64 << 10, MaxRunning: 4, Approval: true, TrustedPersonas: []string{}}
}

// Exec bounds that validation enforces.
const (
	minExecMemory = 16 << 20
	maxExecOutput = 16 << 20
	minExecOutput = 1 << 10
)

// exec checks the exec section.
func (v *validator) exec() {
	e := v.c.Exec
	v.oneOf("exec.sandbox", e.Sandbox, "bwrap", "none")
	if e.Timeout < time.Second {
		v.fail("exec.timeout", "%s is too short: at least 1s (default 60s)", e.Timeout)
	}
	if e.CPU < time.Second {
		v.fail("exec.cpu", "%s is too short: at least 1s (default 30s)", e.CPU)
	}
	if e.Memory < minExecMemory {
		v.fail("exec.memory", "must be at least %s (a shell maps more than that), got %s", Size(minExecMemory), e.Memory)
	}
	v.positive("exec.max_processes", e.MaxProcesses)
	v.positive("exec.max_running", e.MaxRunning)
	if e.MaxOutput < minExecOutput || e.MaxOutput > maxExecOutput {
		v.fail("exec.max_output", "must be between %s and %s, got %s", Size(minExecOutput), Size(maxExecOutput), e.MaxOutput)
	}
	for i, p := range e.TrustedPersonas {
		v.persona(fmt.Sprintf("exec.trusted_personas[%d]", i), p)
	}
	if e.TempDir != "" && !filepath.IsAbs(e.TempDir) {
		v.fail("exec.temp_dir", "must be an absolute path, got %q", e.TempDir)
	}
}
