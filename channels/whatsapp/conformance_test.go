package whatsapp

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

// The adapter conformance suite (channels/channeltest), run against the
// adapter's webhook served on a local HTTP server and fakewhatsapp.
func TestConformance(t *testing.T) {
	channeltest.Run(t, conformance{})
}

type conformance struct{}

func (conformance) Capabilities() channeltest.Capabilities {
	return channeltest.Capabilities{
		MaxChunk:   ChunkLimit,
		CodeBlocks: channeltest.Fenced,
		// WhatsApp shows typing for 25 s after each read receipt with the
		// indicator, or until the answer; there is no way to take it down.
		TypingExpires: true,
		NotApplicable: map[channeltest.Behaviour]string{
			channeltest.Streaming:    "the Cloud API cannot edit a sent message: the final answer only",
			channeltest.GroupMention: "every Cloud API chat is one user and the business: there are no group chats",
			channeltest.RateLimit: "the Cloud API's throttling errors (130429, 131056, 80007) carry no retry-after to honour; " +
				"Send returns them as RateLimited with a per-code wait (TestSendErrorsClassified)",
		},
	}
}

func (conformance) New(t *testing.T) (channels.Channel, channeltest.Driver) {
	fake, a, _ := newRig(t, fakewhatsapp.Options{})
	return a, &waDriver{fake: fake}
}

// newRig starts a fake, an adapter pointed at it and the adapter's webhook
// on a local HTTP server the fake delivers to.
func newRig(t *testing.T, fo fakewhatsapp.Options, mod ...func(*Options)) (*fakewhatsapp.Server, *Adapter, *httptest.Server) {
	t.Helper()
	fake := fakewhatsapp.New(t, fo)
	o := Options{
		PhoneNumberID: fake.PhoneNumberID(), AccessToken: fake.AccessToken(), AppSecret: fake.AppSecret(),
		VerifyToken: fake.VerifyToken(), APIURL: fake.URL(), TypingInterval: 50 * time.Millisecond,
		Now: fo.Now,
	}
	for _, m := range mod {
		m(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(a.WebhookHandler())
	t.Cleanup(hs.Close)
	fake.SetWebhook(hs.URL + WebhookPath)
	return fake, a, hs
}

var conformanceUser = fakewhatsapp.User{WaID: "4915112345678", Name: "Ada"}

// waDriver plays WhatsApp's users with fakewhatsapp.
type waDriver struct {
	fake *fakewhatsapp.Server
	mu   sync.Mutex
	n    int
}

func target(u fakewhatsapp.User) channels.Target {
	return channels.Target{Channel: Name, ChatID: "+" + u.WaID}
}

func (d *waDriver) DirectTarget() channels.Target { return target(conformanceUser) }

func userOf(t testing.TB, tg channels.Target) fakewhatsapp.User {
	if !strings.HasPrefix(tg.ChatID, "+") {
		t.Fatalf("not a WhatsApp chat: %s", tg)
	}
	return fakewhatsapp.User{WaID: strings.TrimPrefix(tg.ChatID, "+"), Name: "User " + tg.ChatID}
}

// UserSays returns the webhook delivery, which Redeliver posts again.
func (d *waDriver) UserSays(t testing.TB, tg channels.Target, text string) channeltest.Event {
	u := userOf(t, tg)
	del := d.fake.Send(u, d.fake.Text(u, text))
	del.Wait(t, channeltest.Timeout)
	return del
}

func (d *waDriver) Redeliver(t testing.TB, ev channeltest.Event) {
	del, ok := ev.(*fakewhatsapp.Delivery)
	if !ok {
		t.Fatalf("not a delivery: %T", ev)
	}
	d.fake.Redeliver(del).Wait(t, channeltest.Timeout)
}

// BotSays delivers what WhatsApp sends about the bot's own message: status
// callbacks (sent, delivered, read), never a message.
func (d *waDriver) BotSays(t testing.TB, tg channels.Target, _ string) {
	u := userOf(t, tg)
	for _, st := range []string{"sent", "delivered", "read"} {
		d.fake.Post(d.fake.StatusPayload("wamid.BOTOWN0001", u.WaID, st, 0)).Wait(t, channeltest.Timeout)
	}
}

func (d *waDriver) UserSendsImage(t testing.TB, tg channels.Target, caption string, data []byte) channeltest.Event {
	u := userOf(t, tg)
	del := d.fake.Send(u, d.fake.Media(u, "image", "image/jpeg", data, caption, "", false))
	del.Wait(t, channeltest.Timeout)
	return del
}

// DropConnection cuts the connections to the Graph API and to the webhook.
func (d *waDriver) DropConnection(testing.TB) { d.fake.DropConnections() }

// TypingTarget is a new user's chat who just wrote (typing needs a
// received message to mark read).
func (d *waDriver) TypingTarget(t testing.TB) channels.Target {
	d.mu.Lock()
	d.n++
	u := fakewhatsapp.User{WaID: fmt.Sprintf("4930%07d", d.n), Name: "Typist"}
	d.mu.Unlock()
	d.fake.Send(u, d.fake.Text(u, "are you typing?")).Wait(t, channeltest.Timeout)
	return target(u)
}

func (d *waDriver) Typing(tg channels.Target) (signals int, shown bool) {
	for _, r := range d.fake.Reads() {
		if r.Typing && d.fake.Sender(r.MessageID) == strings.TrimPrefix(tg.ChatID, "+") {
			signals++
		}
	}
	return signals, signals > 0
}

func (d *waDriver) Sent(tg channels.Target) []string {
	var out []string
	for _, m := range d.fake.Sent(tg.ChatID) {
		out = append(out, m.Text)
	}
	return out
}

func (d *waDriver) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	d.fake.WaitFor(t, channeltest.Timeout, what, cond)
}
