package telegram

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// The adapter conformance suite (channels/channeltest), run against the
// polling adapter and faketelegram.
func TestConformance(t *testing.T) {
	channeltest.Run(t, conformance{})
}

const (
	conformanceDM    int64 = 4242
	conformanceGroup int64 = -100777
)

type conformance struct{}

func (conformance) Capabilities() channeltest.Capabilities {
	return channeltest.Capabilities{
		MaxChunk:      ChunkLimit,
		CodeBlocks:    channeltest.HTMLPre,
		TypingExpires: true, // sendChatAction shows for 5s
	}
}

func (conformance) New(t *testing.T) (channels.Channel, channeltest.Driver) {
	fake := faketelegram.New(t, faketelegram.Options{})
	fake.AddChat(faketelegram.Chat{ID: conformanceDM, Type: "private", FirstName: "User"})
	fake.AddChat(faketelegram.Chat{ID: conformanceGroup, Type: "supergroup", Title: "Conformance"})
	logs := &syncBuffer{}
	ch, err := New(testOptions(fake, logs))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), fake.Token()) {
			t.Errorf("the bot token appeared in the logs:\n%s", logs.String())
		}
	})
	return ch, &tgDriver{fake: fake}
}

// tgDriver plays Telegram's users with faketelegram.
type tgDriver struct {
	fake    *faketelegram.Server
	typists int64 // private chats made for typing
}

func target(id int64) channels.Target {
	return channels.Target{Channel: Name, ChatID: strconv.FormatInt(id, 10)}
}

func chatOf(t testing.TB, tg channels.Target) int64 {
	t.Helper()
	id, err := strconv.ParseInt(tg.ChatID, 10, 64)
	if err != nil {
		t.Fatalf("target %s: %v", tg, err)
	}
	return id
}

func (d *tgDriver) DirectTarget() channels.Target { return target(conformanceDM) }
func (d *tgDriver) GroupTarget() channels.Target  { return target(conformanceGroup) }

func (d *tgDriver) UserSays(t testing.TB, tg channels.Target, text string) channeltest.Event {
	return d.fake.UserSays(chatOf(t, tg), text)
}

func (d *tgDriver) UserMentions(t testing.TB, tg channels.Target, text string) channeltest.Event {
	return d.fake.UserSays(chatOf(t, tg), "@"+d.fake.Bot().Username+" "+text)
}

// Redeliver enqueues the same message in a new update, as Telegram sends
// an update again that was not confirmed.
func (d *tgDriver) Redeliver(t testing.TB, ev channeltest.Event) {
	m, ok := ev.(faketelegram.Message)
	if !ok {
		t.Fatalf("not a telegram message: %T", ev)
	}
	d.fake.SendUpdate(faketelegram.Update{Message: &m})
}

func (d *tgDriver) BotSays(t testing.TB, tg channels.Target, text string) {
	d.fake.UserSays(chatOf(t, tg), text, faketelegram.From(d.fake.Bot()))
}

func (d *tgDriver) UserSendsImage(t testing.TB, tg channels.Target, caption string, data []byte) channeltest.Event {
	return d.fake.UserSendsPhoto(chatOf(t, tg), data, caption)
}

func (d *tgDriver) RateLimitNextSend(_ testing.TB, after time.Duration) {
	d.fake.FailNext("sendMessage", 1, faketelegram.TooManyRequests(int(after/time.Second)))
}

func (d *tgDriver) DropConnection(testing.TB) { d.fake.DropConnections() }

// TypingTarget opens a new private chat.
func (d *tgDriver) TypingTarget(testing.TB) channels.Target {
	d.typists++
	id := conformanceDM + 1000 + d.typists
	d.fake.AddChat(faketelegram.Chat{ID: id, Type: "private", FirstName: "Typist"})
	return target(id)
}

func (d *tgDriver) Typing(tg channels.Target) (int, bool) {
	n := 0
	for _, r := range d.fake.Requests("sendChatAction") {
		if r.Fields["chat_id"] == tg.ChatID && r.Fields["action"] == "typing" {
			n++
		}
	}
	return n, false
}

func (d *tgDriver) Sent(tg channels.Target) []string {
	id, err := strconv.ParseInt(tg.ChatID, 10, 64)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range d.fake.Sent(id) {
		if tg.ThreadID == "" || strconv.Itoa(m.ThreadID) == tg.ThreadID {
			out = append(out, m.Plain)
		}
	}
	return out
}

func (d *tgDriver) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	d.fake.WaitFor(t, channeltest.Timeout, what, cond)
}
