package chaos

import (
	"os/exec"
	"syscall"
	"testing"
)

// cpuHog runs two busy processes beside the test until it ends, as on the
// loaded machine (load average 10–17 on two cores) where an outside run saw
// answers doubled after a crash and the suite fail. They die with the test
// process (Pdeathsig) and are reaped at cleanup.
func cpuHog(t *testing.T) {
	t.Helper()
	for range 2 {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start the CPU hog: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}
