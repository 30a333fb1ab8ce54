package mcp

import "syscall"

// setDeathSignal makes Linux kill the child when the daemon dies without
// a clean shutdown (SIGKILL, crash): no orphaned servers.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
