package matrix

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// This file is the syntax of Matrix ids as an operator writes them in
// config.yaml (targets, user ids): Descriptor.ChatID and UserID.

var (
	dnsNameRE = regexp.MustCompile(`^[A-Za-z0-9.-]{1,255}$`)
	portRE    = regexp.MustCompile(`^[0-9]{1,5}$`)
)

// validServerName accepts the spec's server_name: a DNS name, an IPv4
// address or a bracketed IPv6 literal, with an optional port.
func validServerName(s string) bool {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return false
		}
		addr, err := netip.ParseAddr(s[1:end])
		if err != nil || !addr.Is6() {
			return false
		}
		host, port = "", s[end+1:]
		if port != "" {
			p, ok := strings.CutPrefix(port, ":")
			if !ok {
				return false
			}
			port = p
		}
	} else if h, p, ok := strings.Cut(s, ":"); ok {
		host, port = h, p
	}
	if port != "" && !portRE.MatchString(port) {
		return false
	}
	return strings.HasPrefix(s, "[") || dnsNameRE.MatchString(host)
}

// serverHint says how to write a server name that did not parse.
func serverHint(kind, local, server string) error {
	if strings.Count(server, ":") > 1 && !strings.HasPrefix(server, "[") {
		return fmt.Errorf("an IPv6 server name is written in brackets: %s%s:[%s]", kind, local, server)
	}
	return fmt.Errorf("a Matrix %s id is %s<id>:<server> (a host name, an IPv4 address or a bracketed IPv6 address, optionally :port), e.g. %s%s:example.org",
		map[string]string{"!": "room", "@": "user"}[kind], kind, kind, local)
}

// checkChatID is Descriptor.ChatID: a room id "!id:server" and an optional
// thread root event id "$…".
func checkChatID(chatID, threadID string) error {
	local, server, _ := strings.Cut(strings.TrimPrefix(chatID, "!"), ":")
	raw := server
	if threadID != "" && !strings.HasPrefix(threadID, "$") {
		// "!room:::1" splits as chat "!room:" and thread ":1".
		raw = server + ":" + threadID
	}
	if !strings.HasPrefix(chatID, "!") || local == "" || !validServerName(raw) {
		if local == "" {
			local = "room"
		}
		return serverHint("!", local, raw)
	}
	if threadID != "" && !strings.HasPrefix(threadID, "$") {
		return errors.New("a Matrix thread is named by its root event id, which starts with '$'")
	}
	return nil
}

// checkUserID is Descriptor.UserID: "@name:server".
func checkUserID(id string) error {
	local, server, _ := strings.Cut(strings.TrimPrefix(id, "@"), ":")
	if !strings.HasPrefix(id, "@") || local == "" || !validServerName(server) {
		if local == "" {
			local = "name"
		}
		return serverHint("@", local, server)
	}
	return nil
}
