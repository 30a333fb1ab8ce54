package hub_test

import (
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// Admits answers an invitation as the access policy would answer a message
// from the inviter: direct invitations like direct messages (pairing mode
// admits a stranger so the pairing code can be sent), group invitations like
// a mention in a group.
func TestAdmits(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	tests := []struct {
		name   string
		access channels.AccessPolicy
		user   string
		direct bool
		want   bool
	}{
		{"allowlisted, direct", channels.AccessPolicy{Mode: channels.AccessAllowlist, AllowFrom: []string{"mx:user:@a:x"}, Groups: channels.GroupsMention}, "@a:x", true, true},
		{"allowlisted, group", channels.AccessPolicy{Mode: channels.AccessAllowlist, AllowFrom: []string{"mx:user:@a:x"}, Groups: channels.GroupsMention}, "@a:x", false, true},
		{"stranger, allowlist", channels.AccessPolicy{Mode: channels.AccessAllowlist, AllowFrom: []string{"mx:user:@a:x"}, Groups: channels.GroupsMention}, "@s:x", true, false},
		{"stranger, pairing, direct", channels.AccessPolicy{Mode: channels.AccessPairing, Groups: channels.GroupsMention}, "@s:x", true, true},
		{"stranger, pairing, group", channels.AccessPolicy{Mode: channels.AccessPairing, Groups: channels.GroupsMention}, "@s:x", false, false},
		{"groups off", channels.AccessPolicy{Mode: channels.AccessOpen, Groups: channels.GroupsOff}, "@s:x", false, false},
		{"open", channels.AccessPolicy{Mode: channels.AccessOpen, Groups: channels.GroupsMention}, "@s:x", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, llm, tc.access)
			got, err := r.h.Admits(context.Background(), "mx", tc.user, tc.direct)
			if err != nil || got != tc.want {
				t.Errorf("Admits = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
