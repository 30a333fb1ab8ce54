package daemon

import (
	"runtime/debug"
	"testing"
)

// The daemon collects at GOGC=200 unless the operator set GOGC; restore puts
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
