package heartbeat

import (
	"strings"
	"testing"
)

func TestJobNameRule(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"Pay-rent", false},
		{"pay rent", false},
		{"pay_rent-2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := JobSpec{Name: tt.name, Kind: KindReminder, Text: "Pay the rent", Schedule: "0 9 * * *",
				DeliverTo: []string{"telegram:42"}}
			err := spec.Validate(nil)
			if tt.ok && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "must be 1-64 characters")) {
				t.Fatalf("Validate: %v, want the name rule", err)
			}
		})
	}
}
