package channels

import (
	"slices"
	"strings"
)

// ConsoleChannel is the local terminal's channel name; whoever holds the
// terminal runs the daemon, so it is never gated.
const ConsoleChannel = "console"

// WebChannel is the web console's chat channel; its user is the operator
// logged in with the admin token, so, like the console, it is never gated.
const WebChannel = "web"

// operatorChannel reports whether ch belongs to the operator (never gated,
// always admin).
func operatorChannel(ch string) bool { return ch == ConsoleChannel || ch == WebChannel }

// Access modes and group policies (config access.mode / access.groups).
const (
	AccessOpen      = "open"
	AccessAllowlist = "allowlist"
	AccessPairing   = "pairing"

	GroupsMention = "mention"
	GroupsAll     = "all"
	GroupsOff     = "off"
)

// AccessPolicy is the access part of the configuration. It is replaced as a
// whole on a config reload (Handler.SetAccess).
type AccessPolicy struct {
	Mode      string   // open | allowlist | pairing
	AllowFrom []string // "telegram:user:42" (a user) or "telegram:-100123" (everyone in a chat)
	Groups    string   // mention | all | off
	AllowBots bool     // let other bots' messages through
	Admins    []string // users or chat targets allowed admin commands
}

// Decision is what the handler does with an inbound message.
type Decision int

const (
	// Ignore drops the message silently (not for us, not allowed in a group).
	Ignore Decision = iota
	// Allow lets the message through to commands and the agent.
	Allow
	// NeedsPairing answers with a pairing code and nothing else.
	NeedsPairing
	// Deny drops the message from an unknown user (allowlist mode) silently.
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case NeedsPairing:
		return "needs_pairing"
	case Deny:
		return "deny"
	}
	return "ignore"
}

// Decide applies the policy to msg. paired reports whether the sender was
// approved through pairing. It is a pure function so it can be tested as a table.
func (p *AccessPolicy) Decide(msg *Message, paired bool) Decision {
	if msg.FromSelf || (msg.Sender.IsBot && !p.AllowBots) {
		return Ignore
	}
	if operatorChannel(msg.Channel) {
		return Allow // the local terminal and the logged-in web console are the operator's own
	}
	if !msg.Direct {
		switch p.Groups {
		case GroupsOff:
			return Ignore
		case GroupsAll:
		default: // mention
			if !msg.Mentioned {
				return Ignore
			}
		}
	}
	if p.IsAdmin(msg) {
		return Allow
	}
	switch p.Mode {
	case AccessOpen:
		return Allow
	case AccessAllowlist:
		if p.listed(msg) {
			return Allow
		}
		return Deny
	default: // pairing
		if p.listed(msg) || paired {
			return Allow
		}
		if msg.Direct {
			return NeedsPairing
		}
		return Deny // never send pairing codes in groups
	}
}

// IsAdmin reports whether the sender (or the chat) is listed in Admins.
func (p *AccessPolicy) IsAdmin(msg *Message) bool {
	return operatorChannel(msg.Channel) || matches(p.Admins, msg)
}

func (p *AccessPolicy) listed(msg *Message) bool { return matches(p.AllowFrom, msg) }

func matches(list []string, msg *Message) bool {
	if len(list) == 0 {
		return false // no keys to build
	}
	user := msg.UserKey()
	target := msg.Target().String()
	chat := msg.Channel + ":" + msg.ChatID
	return slices.ContainsFunc(list, func(e string) bool {
		e = strings.TrimSpace(e)
		return e == user || e == target || e == chat
	})
}
