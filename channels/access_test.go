package channels

import "testing"

func TestAccessDecide(t *testing.T) {
	dm := Message{Channel: "telegram", ChatID: "42", Sender: Sender{ID: "42"}, Direct: true}
	group := Message{Channel: "telegram", ChatID: "-100", Sender: Sender{ID: "42"}}
	mentioned := group
	mentioned.Mentioned = true
	bot := dm
	bot.Sender.IsBot = true
	self := dm
	self.FromSelf = true
	stranger := dm
	stranger.Sender.ID, stranger.ChatID = "7", "7"

	tests := []struct {
		name   string
		pol    AccessPolicy
		msg    Message
		paired bool
		want   Decision
	}{
		{"open dm", AccessPolicy{Mode: AccessOpen}, dm, false, Allow},
		{"own message", AccessPolicy{Mode: AccessOpen}, self, false, Ignore},
		{"other bot", AccessPolicy{Mode: AccessOpen}, bot, false, Ignore},
		{"other bot allowed", AccessPolicy{Mode: AccessOpen, AllowBots: true}, bot, false, Allow},
		{"group without mention", AccessPolicy{Mode: AccessOpen, Groups: GroupsMention}, group, false, Ignore},
		{"group with mention", AccessPolicy{Mode: AccessOpen, Groups: GroupsMention}, mentioned, false, Allow},
		{"group all", AccessPolicy{Mode: AccessOpen, Groups: GroupsAll}, group, false, Allow},
		{"groups off", AccessPolicy{Mode: AccessOpen, Groups: GroupsOff}, mentioned, false, Ignore},
		{"allowlist listed user", AccessPolicy{Mode: AccessAllowlist, AllowFrom: []string{"telegram:user:42"}}, dm, false, Allow},
		{"allowlist stranger", AccessPolicy{Mode: AccessAllowlist, AllowFrom: []string{"telegram:user:42"}}, stranger, false, Deny},
		{"allowlist whole chat", AccessPolicy{Mode: AccessAllowlist, AllowFrom: []string{"telegram:-100"}}, mentioned, false, Allow},
		{"pairing stranger dm", AccessPolicy{Mode: AccessPairing}, stranger, false, NeedsPairing},
		{"pairing paired", AccessPolicy{Mode: AccessPairing}, stranger, true, Allow},
		{"pairing stranger in group: no code", AccessPolicy{Mode: AccessPairing}, mentioned, false, Deny},
		{"console is the operator", AccessPolicy{Mode: AccessAllowlist}, Message{Channel: "console", ChatID: "local", Direct: true}, false, Allow},
		{"admin always allowed", AccessPolicy{Mode: AccessAllowlist, Admins: []string{"telegram:user:42"}}, dm, false, Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pol.Decide(&tt.msg, tt.paired); got != tt.want {
				t.Fatalf("Decide = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"telegram:123":                  "telegram:123",
		"slack:C0123:1700000000.000100": "slack:C0123:1700000000.000100",
		"discord:987654321":             "discord:987654321",
		"telegram":                      "",
		"telegram:user:42":              "",
		"slack:C1:":                     "",
	} {
		got, ok := ParseTarget(in)
		if (want == "") == ok || (ok && got.String() != want) {
			t.Errorf("ParseTarget(%q) = %v, %v; want %q", in, got, ok, want)
		}
	}
}
