package email

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// TestAddresses: targets and user ids in config.yaml (deliver_to,
// personas.by_target, access.allow_from, bot.admins) are checked against
// what the adapter produces — a bare address in lower case — so one that
// could never match a chat is refused with the form to write instead.
func TestAddresses(t *testing.T) {
	reg := platform.MustRegistry(Platform)
	targets := []struct {
		in, want string // want "" = accepted, else part of the error
	}{
		{"email:ops@example.com", ""},
		{"email:ops@example.com:sb.1f2e@example.com", ""},
		{"email:Ops@Example.com", "lower case: email:ops@example.com"},
		{"email:ops", "email:<address>"},
		{"email:Ops <ops@example.com>", "not a target"},
		{"email:ops@example.com:", "not a target"},
	}
	for _, tc := range targets {
		err := reg.CheckTarget(tc.in)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckTarget(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	users := []struct{ in, want string }{
		{"email:user:ada@example.org", ""},
		{"email:user:Ada@example.org", "lower case: email:user:ada@example.org"},
		{"email:user:ada", "email:user:<address>"},
	}
	for _, tc := range users {
		err := reg.CheckUserID(tc.in)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckUserID(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}
