package daemon

import (
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/internal/platforms"
)

type dmSection struct {
	Enabled bool `yaml:"enabled"`
}

func (s *dmSection) IsEnabled() bool { return s.Enabled }

// An admin's user id reaches the admin's private chat through the
// platform's direct-chat rule (the descriptor's DirectChat), whatever the
// platform: Telegram's built-in rule and a dummy platform's alike.
func TestAdminTargetFollowsDirectChatRule(t *testing.T) {
	reg, err := platforms.Builtin.With(platform.Descriptor{
		Name:       "echo",
		Section:    func() platform.Section { return &dmSection{} },
		DirectChat: func(id string) (string, bool) { return "dm-" + id, true },
	})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]channels.Target{
		"telegram:user:42": {Channel: "telegram", ChatID: "42"},
		"echo:user:7":      {Channel: "echo", ChatID: "dm-7"},
		"slack:C1":         {Channel: "slack", ChatID: "C1"},
	} {
		if got, ok := adminTarget(reg, in); !ok || got != want {
			t.Errorf("adminTarget(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{"slack:user:U1", "nosuch:user:1", "telegram:user:"} {
		if got, ok := adminTarget(reg, in); ok {
			t.Errorf("adminTarget(%q) = %+v; want none", in, got)
		}
	}
}
