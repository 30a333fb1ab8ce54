package channels

import (
	"strings"
	"testing"
)

// The known channel names come from the caller (the platform registry):
// channels lists none of its own.
func TestCheckTargetKnownNames(t *testing.T) {
	known := []string{"telegram", "echo"}
	for _, ok := range []string{"echo:c1", "telegram:12345", "echo:c1:t9"} {
		if err := CheckTarget(ok, known); err != nil {
			t.Errorf("CheckTarget(%q) = %v", ok, err)
		}
	}
	if err := CheckTarget("slack:C1", known); err == nil || !strings.Contains(err.Error(), `unknown channel "slack" (one of telegram, echo)`) {
		t.Errorf("slack with known %v: %v", known, err)
	}
	for _, bad := range []string{"echo", "echo:", "echo:user:1", "echo:c1:", "echo: c1"} {
		if err := CheckTarget(bad, known); err == nil {
			t.Errorf("CheckTarget(%q) accepted", bad)
		}
	}
	// No names given: the syntax alone is checked.
	if err := CheckTarget("anything:1", nil); err != nil {
		t.Errorf("nil known: %v", err)
	}
	if err := CheckUserID("echo:user:7", known); err != nil {
		t.Errorf("CheckUserID: %v", err)
	}
	if err := CheckUserID("irc:user:7", known); err == nil {
		t.Error("CheckUserID accepted an unknown channel")
	}
	if err := CheckUserID("irc:user:7", nil); err != nil {
		t.Errorf("CheckUserID with nil known: %v", err)
	}
}
