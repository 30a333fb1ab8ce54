package daemon

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// The daemon collects at DefaultGCPercent unless the operator set GOGC; restore puts
// back what was in force.
func TestApplyGCDefault(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	tests := []struct {
		name, env string
		want      int
	}{
		{"GOGC unset", "", DefaultGCPercent},
		{"GOGC set by the operator", "50", 77},
	}
	for _, tt := range tests {
		restore := ApplyGCDefault(func(k string) string {
			if k == "GOGC" {
				return tt.env
			}
			return ""
		})
		if got := debug.SetGCPercent(77); got != tt.want {
			t.Errorf("%s: GOGC in force = %d, want %d", tt.name, got, tt.want)
		}
		debug.SetGCPercent(tt.want)
		restore()
		if got := debug.SetGCPercent(77); got != 77 {
			t.Errorf("%s: after restore GOGC = %d, want 77", tt.name, got)
		}
	}
}

// The daemon runs ProcsPerCPU Ps a CPU unless the operator set GOMAXPROCS;
// restore goes back to Go's default count.
func TestApplyProcsDefault(t *testing.T) {
	defer runtime.SetDefaultGOMAXPROCS()
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	tests := []struct {
		name, env string
		want      int
		procs     Procs
	}{
		{"GOMAXPROCS unset", "", ProcsPerCPU * def, Procs{Idle: def, Busy: ProcsPerCPU * def}},
		{"GOMAXPROCS set by the operator", "1", def, Procs{}},
	}
	for _, tt := range tests {
		procs, restore := ApplyProcsDefault(func(k string) string {
			if k == "GOMAXPROCS" {
				return tt.env
			}
			return ""
		})
		if got := runtime.GOMAXPROCS(0); got != tt.want {
			t.Errorf("%s: GOMAXPROCS in force = %d, want %d", tt.name, got, tt.want)
		}
		if procs != tt.procs {
			t.Errorf("%s: returned %+v, want %+v", tt.name, procs, tt.procs)
		}
		restore()
		if got := runtime.GOMAXPROCS(0); got != def {
			t.Errorf("%s: after restore GOMAXPROCS = %d, want Go's default %d", tt.name, got, def)
		}
	}
}

// ApplyRuntimeDefaults sets both and restores both.
func TestApplyRuntimeDefaults(t *testing.T) {
	defer runtime.SetDefaultGOMAXPROCS()
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	_, restore := ApplyRuntimeDefaults(func(string) string { return "" })
	gc, procs := debug.SetGCPercent(DefaultGCPercent), runtime.GOMAXPROCS(0)
	restore()
	if gc != DefaultGCPercent || procs != ProcsPerCPU*def {
		t.Errorf("in force: GOGC %d, GOMAXPROCS %d; want %d, %d", gc, procs, DefaultGCPercent, ProcsPerCPU*def)
	}
	if gc, procs := debug.SetGCPercent(77), runtime.GOMAXPROCS(0); gc != 77 || procs != def {
		t.Errorf("after restore: GOGC %d, GOMAXPROCS %d; want 77, %d", gc, procs, def)
	}
}
