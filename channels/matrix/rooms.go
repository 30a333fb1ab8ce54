package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/switchboard-bot/switchboard/channels"
)

// This file is what the adapter knows about rooms: which are direct
// (m.direct, direct invites), who is in them, and members' display names.

// maxTracked bounds the per-room and per-user caches (a flood of rooms or
// members cannot grow them without limit; a cleared cache is refilled).
const maxTracked = 10000

// isDirect applies the direct-room rule: listed in m.direct (or joined by a
// direct invite) and no more than two members — a room that grew into a
// group is no longer answered as a direct chat, whatever m.direct says.
// Membership is read once per process with /joined_members and followed
// through m.room.member events afterwards; when it cannot be read the
// listing alone decides.
func (a *Adapter) isDirect(ctx context.Context, roomID string) bool {
	a.mu.Lock()
	listed := a.direct[roomID]
	members, known := a.members[roomID]
	n := len(members)
	a.mu.Unlock()
	if !listed {
		return false
	}
	if !known {
		cctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
		defer cancel()
		resp, err := a.cli.JoinedMembers(cctx, id.RoomID(roomID))
		if err != nil {
			a.log.Warn("room members not read; m.direct alone decides", "room", roomID, "err", err)
			return true
		}
		set := map[string]bool{}
		for u := range resp.Joined {
			set[string(u)] = true
		}
		a.mu.Lock()
		if len(a.members) > maxTracked {
			clear(a.members)
		}
		a.members[roomID] = set
		a.mu.Unlock()
		n = len(set)
	}
	return n <= 2
}

// IsDirect implements channels.DirectTeller.
func (a *Adapter) IsDirect(ctx context.Context, t channels.Target) (bool, error) {
	return t.ThreadID == "" && a.isDirect(ctx, t.ChatID), nil
}

// learnMember follows m.room.member events of roomID: display names, and
// joins and leaves of rooms whose members are known.
func (a *Adapter) learnMember(roomID string, raw json.RawMessage) {
	var ev rawEvent
	if json.Unmarshal(raw, &ev) != nil || ev.Type != "m.room.member" || ev.StateKey == nil {
		return
	}
	var c struct {
		Membership  string `json:"membership"`
		DisplayName string `json:"displayname"`
	}
	if json.Unmarshal(ev.Content, &c) != nil {
		return
	}
	user := *ev.StateKey
	a.mu.Lock()
	defer a.mu.Unlock()
	if set, ok := a.members[roomID]; ok {
		if c.Membership == "join" {
			set[user] = true
		} else {
			delete(set, user)
		}
	}
	if c.DisplayName == "" || user == a.self {
		return // the bot's name is its profile's
	}
	if len(a.names) > maxTracked {
		clear(a.names)
	}
	a.names[user] = c.DisplayName
}

// displayName is user's display name as last seen, else the localpart.
func (a *Adapter) displayName(user string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := a.names[user]; n != "" {
		return n
	}
	local, _, _ := strings.Cut(strings.TrimPrefix(user, "@"), ":")
	return local
}

// accountData follows m.direct.
func (a *Adapter) accountData(raw json.RawMessage) {
	var ev struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &ev) != nil || ev.Type != "m.direct" {
		return
	}
	a.setDirect(ev.Content)
}

// setDirect replaces the rooms m.direct lists.
func (a *Adapter) setDirect(content json.RawMessage) {
	var m map[string][]string
	if err := json.Unmarshal(content, &m); err != nil {
		a.log.Warn("m.direct is not readable; direct rooms unchanged", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.direct = map[string]bool{}
	for _, rooms := range m {
		for _, r := range rooms {
			a.direct[r] = true
		}
	}
}

// loadDirect reads the account's m.direct (404: none yet).
func (a *Adapter) loadDirect(ctx context.Context) error {
	var content json.RawMessage
	err := a.cli.GetAccountData(ctx, "m.direct", &content)
	if errors.Is(err, mautrix.MNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	a.setDirect(content)
	return nil
}

// addDirect lists roomID under user in the account's m.direct, as clients
// do when they join a direct invite.
func (a *Adapter) addDirect(ctx context.Context, user, roomID string) error {
	m := map[string][]string{}
	err := a.cli.GetAccountData(ctx, "m.direct", &m)
	if err != nil && !errors.Is(err, mautrix.MNotFound) {
		return err
	}
	if m == nil {
		m = map[string][]string{}
	}
	if slices.Contains(m[user], roomID) {
		return nil
	}
	m[user] = append(m[user], roomID)
	return a.cli.SetAccountData(ctx, "m.direct", m)
}
