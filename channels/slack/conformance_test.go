package slack

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

// The adapter conformance suite (channels/channeltest), run against the
// Socket Mode adapter and fakeslack.
func TestConformance(t *testing.T) {
	channeltest.Run(t, conformance{})
}

const (
	conformanceUser    = "U0CONF01"
	conformanceChannel = "C0CONF01"
)

type conformance struct{}

func (conformance) Capabilities() channeltest.Capabilities {
	return channeltest.Capabilities{
		MaxChunk:   ChunkLimit,
		CodeBlocks: channeltest.Fenced,
		// Typing is an assistant thread's status: set, then cleared.
	}
}

func (conformance) New(t *testing.T) (channels.Channel, channeltest.Driver) {
	// Slack sends an envelope again that was not acknowledged: the adapter
	// leaves unacknowledged what a stopped client did not finish.
	fake := fakeslack.New(t, fakeslack.Options{RetryUnacked: true})
	fake.AddUser(conformanceUser, "Ada")
	c, err := New(testOptions(fake))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, slDriver{fake: fake}
}

// slDriver plays Slack's users with fakeslack.
type slDriver struct{ fake *fakeslack.Server }

func (d slDriver) DirectTarget() channels.Target {
	return channels.Target{Channel: Name, ChatID: fakeslack.DMChannel(conformanceUser)}
}

func (d slDriver) GroupTarget() channels.Target {
	return channels.Target{Channel: Name, ChatID: conformanceChannel}
}

// UserSays returns the envelope id, which Redeliver plays again.
func (d slDriver) UserSays(_ testing.TB, tg channels.Target, text string) channeltest.Event {
	if tg.ChatID == fakeslack.DMChannel(conformanceUser) {
		_, env := d.fake.UserDMs(conformanceUser, text)
		return env
	}
	_, env := d.fake.UserSays(tg.ChatID, conformanceUser, text)
	return env
}

// UserMentions sends the `message` and the `app_mention` event Slack sends
// for one mention.
func (d slDriver) UserMentions(_ testing.TB, tg channels.Target, text string) channeltest.Event {
	_, envs := d.fake.UserMentions(tg.ChatID, conformanceUser, text)
	return envs[0]
}

// Redeliver plays Slack's retry of an envelope that was not acknowledged in time.
func (d slDriver) Redeliver(t testing.TB, ev channeltest.Event) {
	env, ok := ev.(string)
	if !ok {
		t.Fatalf("not an envelope id: %T", ev)
	}
	d.fake.Redeliver(env)
}

// BotSays sends the `message` event Slack delivers for the bot's own post.
func (d slDriver) BotSays(_ testing.TB, tg channels.Target, text string) {
	m := fakeslack.Message{Channel: tg.ChatID, User: d.fake.BotUserID(), BotID: d.fake.BotID(), Text: text, TS: d.fake.NextTS()}
	d.fake.SendEvent(m.Event())
}

func (d slDriver) UserSendsImage(_ testing.TB, tg channels.Target, caption string, data []byte) channeltest.Event {
	f := d.fake.AddFile(fakeslack.File{ID: "F0CONF01", Name: "photo.jpg", Mimetype: "image/jpeg", Data: data})
	m := fakeslack.Message{Channel: tg.ChatID, User: conformanceUser, Text: caption, TS: d.fake.NextTS(),
		Files: []map[string]any{f}}
	return d.fake.SendEvent(m.Event())
}

func (d slDriver) RateLimitNextSend(_ testing.TB, after time.Duration) {
	d.fake.RateLimitNext("chat.postMessage", 1, int(after/time.Second))
}

// DropConnection closes the Socket Mode connection without a close frame.
func (d slDriver) DropConnection(testing.TB) { d.fake.DropConnections() }

// TypingTarget is an assistant thread, the one place Slack lets a bot
// show that it is working (assistant.threads.setStatus).
func (d slDriver) TypingTarget(t testing.TB) channels.Target {
	ch, ts, env := d.fake.AssistantThreadStarted(conformanceUser)
	d.fake.WaitAcked(t, env, channeltest.Timeout)
	return channels.Target{Channel: Name, ChatID: ch, ThreadID: ts}
}

func (d slDriver) Typing(tg channels.Target) (signals int, shown bool) {
	for _, s := range d.fake.Statuses() {
		if s.Channel != tg.ChatID || s.ThreadTS != tg.ThreadID {
			continue
		}
		shown = s.Status != ""
		if shown {
			signals++
		}
	}
	return signals, shown
}

func (d slDriver) Sent(tg channels.Target) []string {
	var out []string
	for _, p := range d.fake.Messages(tg.ChatID) {
		if p.ThreadTS == tg.ThreadID {
			out = append(out, p.Text)
		}
	}
	return out
}

func (d slDriver) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	d.fake.WaitFor(t, channeltest.Timeout, what, cond)
}
