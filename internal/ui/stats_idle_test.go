package ui

import (
	"testing"
	"time"
)

// Before the first turn the charts are empty points at the right minutes
// (the buckets are allocated with the first turn, issue 19).
func TestStatsSeriesBeforeAnyTurn(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 30, 20, 0, time.UTC)
	st := NewStats(func() time.Time { return now })
	tests := []struct{ n, width int }{{60, 1}, {96, 15}}
	for _, tt := range tests {
		pts := st.Series(tt.n, tt.width)
		if len(pts) != tt.n {
			t.Fatalf("Series(%d, %d) has %d points", tt.n, tt.width, len(pts))
		}
		wantLast := now.Truncate(time.Minute).Add(-time.Duration(tt.width-1) * time.Minute)
		if last := pts[tt.n-1]; !last.Start.Equal(wantLast) || last.Turns != 0 || last.Errors != 0 || last.MaxLat != 0 {
			t.Errorf("Series(%d, %d) last point = %+v, want an empty one starting %v", tt.n, tt.width, last, wantLast)
		}
	}
	if got := st.TurnsLastMinutes(60); got != 0 {
		t.Errorf("turns in the last hour = %d before any turn", got)
	}
}
