//go:build !linux

package chaos

import "testing"

// cpuHog is a no-op off Linux (the busy processes need Pdeathsig so that
// they never outlive the test).
func cpuHog(t *testing.T) { t.Helper() }
