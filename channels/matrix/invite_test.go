package matrix

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

// Invites: the sink (the hub) decides; the adapter joins what it admits,
// declines the rest, and a direct invite makes the room direct (m.direct
// updated, so it stays direct after a restart).
func TestInvites(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	kv := newMemKV()
	a, err := New(testOptions(fake, kv, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	var asked []string
	rec.admit = func(channel, user string, direct bool) bool {
		asked = append(asked, channel+" "+user)
		return user == alice
	}
	running(t, a, admitter{rec})

	fake.Invite("!newdm:fake.test", alice, true)
	fake.Invite("!spam:fake.test", "@stranger:evil.test", false)
	fake.WaitFor(t, waitLong, "the invites answered", func() bool {
		return fake.Joined("!newdm:fake.test") && fake.Left("!spam:fake.test")
	})
	if len(asked) != 2 || asked[0] != "matrix @alice:fake.test" {
		t.Errorf("the sink was asked %q", asked)
	}
	var direct map[string][]string
	if err := json.Unmarshal(fake.AccountData("m.direct"), &direct); err != nil || !strings.Contains(strings.Join(direct[alice], ","), "!newdm:fake.test") {
		t.Errorf("m.direct after joining a direct invite: %s", fake.AccountData("m.direct"))
	}
	fake.UserSays("!newdm:fake.test", alice, "hello in the new room")
	m := withText(waitMsgs(t, fake, rec, "hello in the new room"), "hello in the new room")[0]
	if !m.Direct {
		t.Errorf("a message in a room joined by a direct invite arrived with Direct false")
	}
}

// A sink that cannot tell who may talk to the bot: invites are declined.
func TestInviteDeclinedWithoutAdmitter(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	a, err := New(testOptions(fake, nil, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	running(t, a, newRecorder())
	fake.Invite("!x:fake.test", alice, true)
	fake.WaitFor(t, waitLong, "the invite declined", func() bool { return fake.Left("!x:fake.test") })
}

// Encrypted rooms get one notice, once per room across restarts; nothing
// reaches the sink.
func TestEncryptedRoomNoticeOnce(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	const enc = "!secret:fake.test"
	fake.AddRoom(fakematrix.Room{ID: enc, Members: []string{alice}, Joined: true})
	kv := newMemKV()
	a, err := New(testOptions(fake, kv, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	stop := running(t, a, rec)
	fake.AddRoom(fakematrix.Room{ID: enc, Members: []string{alice}, Joined: true, Encrypted: true})
	fake.UserSays(enc, alice, "secret 1")
	fake.UserSays(enc, alice, "secret 2")
	fake.UserSays(dmRoom, alice, "marker")
	waitMsgs(t, fake, rec, "marker")
	stop()
	b, _ := New(testOptions(fake, kv, &syncBuffer{}))
	running(t, b, rec)
	fake.UserSays(enc, alice, "secret 3")
	fake.UserSays(dmRoom, alice, "marker 2")
	msgs := waitMsgs(t, fake, rec, "marker 2")
	sent := fake.Sent(enc)
	if len(sent) != 1 || sent[0].Body != EncryptedNotice || sent[0].MsgType != "m.notice" {
		t.Errorf("the encrypted room got %+v, want the notice once", sent)
	}
	for _, m := range msgs {
		if m.ChatID == enc {
			t.Errorf("an encrypted event reached the sink: %+v", m)
		}
	}
}

// Attack: a room listed as direct (or joined by a direct invite) that
// grows into a group is no longer answered as a direct chat.
func TestDirectRoomTurnedGroup(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	a, err := New(testOptions(fake, nil, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	running(t, a, rec)
	fake.UserSays(dmRoom, alice, "just us")
	waitMsgs(t, fake, rec, "just us")
	fake.Join(dmRoom, "@mallory:fake.test")
	fake.UserSays(dmRoom, "@mallory:fake.test", "now three of us")
	msgs := waitMsgs(t, fake, rec, "now three of us")
	if m := withText(msgs, "just us"); len(m) != 1 || !m[0].Direct {
		t.Errorf("the two-member direct room: %+v", m)
	}
	if m := withText(msgs, "now three of us"); len(m) != 1 || m[0].Direct {
		t.Errorf("after a third member joined the room is still direct: %+v", m)
	}
	if ok, _ := a.IsDirect(context.Background(), room(dmRoom)); ok {
		t.Error("IsDirect says a three-member room is direct (the heartbeat would greet it)")
	}
}

// An invite's stripped state comes from the inviting server unsigned: a
// hostile server can add a second m.room.member "invite" of the bot naming
// an allowed user as its sender. An invite naming two inviters is declined.
func TestInviteWithForgedStrippedState(t *testing.T) {
	fake := newFake(t, fakematrix.Options{})
	a, err := New(testOptions(fake, nil, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.admit = func(_, user string, _ bool) bool { return user == alice }
	running(t, a, admitter{rec})
	bot := fake.UserID()
	forged, _ := json.Marshal(map[string]any{"type": "m.room.member", "sender": alice, "state_key": bot,
		"content": map[string]any{"membership": "invite"}})
	fake.InviteWithState("!trap:evil.test", "@mallory:evil.test", false, forged)
	fake.Invite("!fine:fake.test", alice, false)
	fake.WaitFor(t, waitLong, "both invites answered", func() bool {
		return fake.Left("!trap:evil.test") && fake.Joined("!fine:fake.test") || fake.Joined("!trap:evil.test")
	})
	if fake.Joined("!trap:evil.test") {
		t.Error("the bot joined a stranger's room on a forged invite naming an allowed user")
	}
}
