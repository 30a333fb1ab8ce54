package matrix

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

// The adapter conformance suite (channels/channeltest) against fakematrix.
func TestConformance(t *testing.T) {
	channeltest.Run(t, conformance{})
}

type conformance struct{}

func (conformance) Capabilities() channeltest.Capabilities {
	return channeltest.Capabilities{MaxChunk: ChunkLimit, CodeBlocks: channeltest.HTMLPre}
}

func (conformance) New(t *testing.T) (channels.Channel, channeltest.Driver) {
	fake := newFake(t, fakematrix.Options{})
	logs := &syncBuffer{}
	a, err := New(testOptions(fake, nil, logs))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), fake.Token()) {
			t.Errorf("the access token appeared in the logs:\n%s", logs.String())
		}
	})
	return a, &mxDriver{fake: fake}
}

// mxDriver plays Matrix users with fakematrix.
type mxDriver struct {
	fake    *fakematrix.Server
	typists int
}

func room(id string) channels.Target { return channels.Target{Channel: Name, ChatID: id} }

func (d *mxDriver) DirectTarget() channels.Target { return room(dmRoom) }
func (d *mxDriver) GroupTarget() channels.Target  { return room(groupRoom) }

func threadOpts(tg channels.Target) []fakematrix.SayOption {
	if tg.ThreadID == "" {
		return nil
	}
	return []fakematrix.SayOption{fakematrix.InThread(tg.ThreadID)}
}

func (d *mxDriver) UserSays(_ testing.TB, tg channels.Target, text string) channeltest.Event {
	return d.fake.UserSays(tg.ChatID, alice, text, threadOpts(tg)...)
}

func (d *mxDriver) UserMentions(_ testing.TB, tg channels.Target, text string) channeltest.Event {
	return d.fake.UserMentions(tg.ChatID, alice, text, threadOpts(tg)...)
}

func (d *mxDriver) Redeliver(t testing.TB, ev channeltest.Event) {
	e, ok := ev.(fakematrix.Event)
	if !ok {
		t.Fatalf("not a fakematrix event: %T", ev)
	}
	d.fake.Redeliver(e)
}

func (d *mxDriver) BotSays(_ testing.TB, tg channels.Target, text string) {
	d.fake.UserSays(tg.ChatID, d.fake.UserID(), text, fakematrix.AsNotice())
}

func (d *mxDriver) UserSendsImage(_ testing.TB, tg channels.Target, caption string, data []byte) channeltest.Event {
	return d.fake.UserSendsImage(tg.ChatID, alice, caption, "image/jpeg", data)
}

func (d *mxDriver) RateLimitNextSend(_ testing.TB, after time.Duration) {
	d.fake.FailNext("send", 1, fakematrix.RateLimited(int(after/time.Millisecond)))
}

func (d *mxDriver) DropConnection(testing.TB) { d.fake.DropConnections() }

func (d *mxDriver) TypingTarget(testing.TB) channels.Target {
	d.typists++
	id := fmt.Sprintf("!typing%d:fake.test", d.typists)
	d.fake.AddRoom(fakematrix.Room{ID: id, Members: []string{alice}, Joined: true, Direct: true})
	return room(id)
}

func (d *mxDriver) Typing(tg channels.Target) (int, bool) { return d.fake.Typing(tg.ChatID) }

func (d *mxDriver) Sent(tg channels.Target) []string {
	var out []string
	for _, m := range d.fake.Sent(tg.ChatID) {
		thread := ""
		if rel, _ := m.RelatesTo["rel_type"].(string); rel == "m.thread" {
			thread, _ = m.RelatesTo["event_id"].(string)
		}
		if thread == tg.ThreadID {
			out = append(out, m.Body)
		}
	}
	return out
}

func (d *mxDriver) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	d.fake.WaitFor(t, channeltest.Timeout, what, cond)
}
