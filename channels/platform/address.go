package platform

import (
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
)

// CheckTarget checks a target address written by the operator: the generic
// syntax and a registered channel (channels.CheckTarget), then the
// platform's own id syntax (Descriptor.ChatID), so an address the platform
// never produces ("whatsapp:4915…" for "whatsapp:+4915…") is refused with
// the form to write instead of never matching a session.
func (r *Registry) CheckTarget(s string) error {
	if err := channels.CheckTarget(s, r.Names()); err != nil {
		return err
	}
	t, ok := channels.ParseTarget(s)
	if !ok {
		return fmt.Errorf("%q is not a target", s)
	}
	if d, ok := r.Lookup(t.Channel); ok && d.ChatID != nil {
		if err := d.ChatID(t.ChatID, t.ThreadID); err != nil {
			return fmt.Errorf("%q: %w", s, err)
		}
	}
	return nil
}

// CheckUserID checks a user id "<channel>:user:<id>" as CheckTarget checks
// a target (Descriptor.UserID).
func (r *Registry) CheckUserID(s string) error {
	if err := channels.CheckUserID(s, r.Names()); err != nil {
		return err
	}
	name, rest, _ := strings.Cut(s, ":")
	if d, ok := r.Lookup(name); ok && d.UserID != nil {
		if err := d.UserID(strings.TrimPrefix(rest, "user:")); err != nil {
			return fmt.Errorf("%q: %w", s, err)
		}
	}
	return nil
}
