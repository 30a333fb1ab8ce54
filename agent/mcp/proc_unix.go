//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcAttrs starts the child in its own process group so shutdown can
// end it with every process it started.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// killGroup sends SIGKILL to the process group pgid (ignored when it is
// already gone).
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
