package memory

import (
	"testing"
	"time"
)

// An outage starts once (the first Fail), keeps its start while its reason
// changes, and ends only with Recover, which reports how long it lasted.
func TestHealthState(t *testing.T) {
	var h HealthState
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := h.Health(); !got.OK || got.Reason != "" || !got.Since.IsZero() {
		t.Fatalf("zero HealthState = %+v, want available", got)
	}
	if _, ended := h.Recover(t0); ended {
		t.Fatal("Recover without an outage reported one")
	}
	if !h.Fail(t0, "connection refused") {
		t.Fatal("the first Fail did not start an outage")
	}
	if h.Fail(t0.Add(time.Second), "broken pipe") {
		t.Fatal("a second Fail started another outage")
	}
	if got := h.Health(); got.OK || got.Reason != "broken pipe" || !got.Since.Equal(t0) {
		t.Fatalf("Health during the outage = %+v, want the latest reason since %s", got, t0)
	}
	outage, ended := h.Recover(t0.Add(3 * time.Second))
	if !ended || outage != 3*time.Second {
		t.Fatalf("Recover = %s, %v; want 3s, true", outage, ended)
	}
	if got := h.Health(); !got.OK || got.Reason != "" || !got.Since.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("Health after Recover = %+v", got)
	}
}
