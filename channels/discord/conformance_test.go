package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

// The adapter conformance suite (channels/channeltest), run against the
// gateway adapter and fakediscord.
func TestConformance(t *testing.T) {
	channeltest.Run(t, conformance{})
}

type conformance struct{}

func (conformance) Capabilities() channeltest.Capabilities {
	return channeltest.Capabilities{
		MaxChunk:      ChunkLimit,
		MaxLines:      MaxLines,
		CodeBlocks:    channeltest.Fenced,
		TypingExpires: true, // a typing request shows for 10s
	}
}

func (conformance) New(t *testing.T) (channels.Channel, channeltest.Driver) {
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken, HeartbeatInterval: 500 * time.Millisecond})
	fake.AddDM(dmID)
	fake.AddChannel(guildID, chanID, "general")
	ch, logs := newChannel(t, fake, func(o *Options) {
		o.TypingInterval = 20 * time.Millisecond
		// Other bots' messages pass, so that OwnMessagesIgnored sees the
		// bot's own messages dropped as its own, not as a bot's.
		o.AllowBots = true
	})
	t.Cleanup(func() {
		if strings.Contains(logs.String(), testToken) {
			t.Errorf("the bot token appeared in the logs:\n%s", logs.String())
		}
	})
	return ch, &dcDriver{fake: fake}
}

// dcDriver plays Discord's users with fakediscord.
type dcDriver struct {
	fake    *fakediscord.Server
	typists int // DM channels made for typing
}

func (d *dcDriver) DirectTarget() channels.Target {
	return channels.Target{Channel: Name, ChatID: dmID}
}

func (d *dcDriver) GroupTarget() channels.Target {
	return channels.Target{Channel: Name, ChatID: chanID}
}

// say posts as author in target's channel (a guild channel or the DM).
func (d *dcDriver) say(tg channels.Target, author, text string, opts fakediscord.SayOptions) fakediscord.Message {
	if tg.ChatID == chanID {
		opts.GuildID = guildID
	}
	return d.fake.UserSays(postChannel(tg), author, text, opts)
}

func (d *dcDriver) UserSays(_ testing.TB, tg channels.Target, text string) channeltest.Event {
	return d.say(tg, userID, text, fakediscord.SayOptions{})
}

func (d *dcDriver) UserMentions(_ testing.TB, tg channels.Target, text string) channeltest.Event {
	return d.say(tg, userID, "<@"+d.fake.BotID()+"> "+text, fakediscord.SayOptions{})
}

// Redeliver dispatches MESSAGE_CREATE of the same message again, as the
// gateway may replay events after a RESUME.
func (d *dcDriver) Redeliver(t testing.TB, ev channeltest.Event) {
	m, ok := ev.(fakediscord.Message)
	if !ok {
		t.Fatalf("not a discord message: %T", ev)
	}
	if !d.fake.Redispatch(m.ChannelID, m.ID) {
		t.Fatalf("message %s is not in channel %s", m.ID, m.ChannelID)
	}
}

func (d *dcDriver) BotSays(_ testing.TB, tg channels.Target, text string) {
	d.say(tg, d.fake.BotID(), text, fakediscord.SayOptions{Bot: true})
}

func (d *dcDriver) UserSendsImage(_ testing.TB, tg channels.Target, caption string, data []byte) channeltest.Event {
	return d.say(tg, userID, caption, fakediscord.SayOptions{Attachments: []fakediscord.FileSpec{
		{Filename: "photo.jpg", ContentType: "image/jpeg", Data: data},
	}})
}

func (d *dcDriver) RateLimitNextSend(_ testing.TB, after time.Duration) {
	d.fake.RateLimitNext(1, after.Seconds(), false)
}

// DropConnection cuts the gateway connection; the session stays resumable
// and what is dispatched meanwhile is replayed on RESUME.
func (d *dcDriver) DropConnection(testing.TB) { d.fake.DropConnection() }

// TypingTarget opens a new DM channel.
func (d *dcDriver) TypingTarget(testing.TB) channels.Target {
	d.typists++
	id := fmt.Sprintf("5100000000000000%02d", d.typists)
	d.fake.AddDM(id)
	return channels.Target{Channel: Name, ChatID: id}
}

func (d *dcDriver) Typing(tg channels.Target) (int, bool) {
	return d.fake.Typing(postChannel(tg)), false
}

func (d *dcDriver) Sent(tg channels.Target) []string {
	var out []string
	for _, m := range d.fake.Sent(postChannel(tg)) {
		out = append(out, m.Content)
	}
	return out
}

func (d *dcDriver) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	d.fake.WaitFor(t, channeltest.Timeout, what, cond)
}
