package whatsapp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

var ada = fakewhatsapp.User{WaID: "4915112345678", Name: "Ada"}

// Forged, tampered, unsigned and oversized deliveries are refused before
// anything is parsed; a genuine one after them is handed on once.
func TestWebhookRefusesForgeries(t *testing.T) {
	fake, _, s, _ := running(t, fakewhatsapp.Options{})
	body := fake.Payload(ada, fake.Text(ada, "transfer all my money"))
	tampered := bytes.Replace(body, []byte("all my money"), []byte("everything now"), 1)
	cases := []struct {
		name string
		body []byte
		sig  string
		want int
	}{
		{"no signature", body, "", http.StatusUnauthorized},
		{"signed with another secret", body, fakewhatsapp.Signature("not-the-app-secret", body), http.StatusUnauthorized},
		{"signature of another body", tampered, fake.Sign(body), http.StatusUnauthorized},
		{"sha1 form", body, "sha1=" + strings.Repeat("0", 40), http.StatusUnauthorized},
		{"truncated signature", body, fake.Sign(body)[:40], http.StatusUnauthorized},
		{"not hex", body, "sha256=" + strings.Repeat("zz", 32), http.StatusUnauthorized},
		{"50 MB body", bytes.Repeat([]byte("x"), 50<<20), "sha256=" + strings.Repeat("00", 32), http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fake.PostRaw(tc.body, tc.sig); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
	fake.UserSays(t, ada, "the genuine one")
	msgs := s.wait(t, 1)
	if len(msgs) != 1 || msgs[0].Text != "the genuine one" {
		t.Fatalf("the sink got %+v, want only the genuine message", msgs)
	}
}

// Meta's subscription check: the right token echoes the challenge as plain
// text; anything else is refused.
func TestWebhookVerification(t *testing.T) {
	fake, _, _, _ := running(t, fakewhatsapp.Options{})
	cases := []struct {
		name, mode, token, challenge string
		want                         int
	}{
		{"right token", "subscribe", fake.VerifyToken(), "1158201444", http.StatusOK},
		{"wrong token", "subscribe", "guess", "1158201444", http.StatusForbidden},
		{"empty token", "subscribe", "", "1158201444", http.StatusForbidden},
		{"wrong mode", "unsubscribe", fake.VerifyToken(), "1158201444", http.StatusForbidden},
		{"no challenge", "subscribe", fake.VerifyToken(), "", http.StatusForbidden},
		{"huge challenge", "subscribe", fake.VerifyToken(), strings.Repeat("9", 10000), http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := fake.Verify(tc.mode, tc.token, tc.challenge)
			if code != tc.want {
				t.Fatalf("status %d (%q), want %d", code, body, tc.want)
			}
			if code == http.StatusOK && body != tc.challenge {
				t.Errorf("answered %q, want the challenge %q echoed", body, tc.challenge)
			}
			if code != http.StatusOK && strings.Contains(body, tc.challenge) && tc.challenge != "" {
				t.Errorf("a refused verification echoed the challenge: %q", body)
			}
		})
	}
}

// An empty verify token verifies nothing (not even an empty guess).
func TestWebhookVerificationWithoutToken(t *testing.T) {
	fake, a, _ := newRig(t, fakewhatsapp.Options{}, func(o *Options) { o.VerifyToken = "" })
	_ = a
	if code, _ := fake.Verify("subscribe", "", "123"); code != http.StatusForbidden {
		t.Fatalf("status %d, want 403 with no verify token configured", code)
	}
}

// Replays: within the window the same message id reaches the sink (the
// hub's dedup drops it); a delivery replayed after the window, or a message
// dated in the future, is acknowledged and dropped.
func TestWebhookStaleAndReplayed(t *testing.T) {
	clk := newClock()
	fake, _, s, _ := running(t, fakewhatsapp.Options{Now: clk.Now})
	first := fake.UserSays(t, ada, "hello")
	fake.Redeliver(first).Wait(t, 20*time.Second)
	msgs := s.wait(t, 2)
	if msgs[0].MessageID != msgs[1].MessageID {
		t.Fatalf("a replay reached the sink under another id: %q vs %q", msgs[0].MessageID, msgs[1].MessageID)
	}
	clk.Add(25 * time.Hour)
	fake.Redeliver(first).Wait(t, 20*time.Second)
	if len(s.all()) != 2 {
		t.Fatalf("a replay 25 hours later reached the sink: %+v", s.all())
	}
	future := fake.Text(ada, "from the future")
	future["timestamp"] = "99999999999"
	fake.Send(ada, future).Wait(t, 20*time.Second)
	fake.UserSays(t, ada, "now")
	msgs = s.wait(t, 3)
	if len(msgs) != 3 || msgs[2].Text != "now" {
		t.Fatalf("the sink got %+v, want the future-dated message dropped", msgs)
	}
}

// Ack after persist: a delivery the sink could not persist is answered 500,
// Meta delivers it again, and the message arrives then.
func TestWebhookNotPersistedIsRetried(t *testing.T) {
	fake, _, s, _ := running(t, fakewhatsapp.Options{})
	s.mu.Lock()
	s.fail = 2
	s.mu.Unlock()
	d := fake.UserSays(t, ada, "keep trying")
	if at := d.Attempts(); len(at) != 3 || at[0] != 500 || at[1] != 500 || at[2] != 200 {
		t.Errorf("attempts answered %v, want 500, 500, 200", at)
	}
	if msgs := s.wait(t, 1); msgs[0].Text != "keep trying" {
		t.Fatalf("got %+v", msgs)
	}
}

// Deliveries for another phone number of the same app, other objects and
// undecodable (but signed) bodies are acknowledged without a message.
func TestWebhookIgnoresOthers(t *testing.T) {
	fake, _, s, _ := running(t, fakewhatsapp.Options{})
	other := bytes.Replace(fake.Payload(ada, fake.Text(ada, "for another number")),
		[]byte(fake.PhoneNumberID()), []byte("999999999"), 1)
	page := []byte(`{"object":"page","entry":[]}`)
	junk := []byte(`{"object":`)
	// The business's own messages (coexistence echoes, or a message "from"
	// the bot's own number) must never come back as a user's: a loop.
	echo := bytes.Replace(fake.Payload(ada, fake.Text(ada, "echo of the bot")), []byte(`"field":"messages"`), []byte(`"field":"smb_message_echoes"`), 1)
	bot := fakewhatsapp.User{WaID: fakewhatsapp.DefaultDisplayNumber, Name: "Switchboard"}
	self := fake.Payload(bot, fake.Text(bot, "the bot's own words"))
	for _, b := range [][]byte{other, page, junk, echo, self} {
		if code := fake.PostRaw(b, fake.Sign(b)); code != http.StatusOK {
			t.Errorf("%s: status %d, want 200 (nothing Meta should retry)", b[:min(len(b), 40)], code)
		}
	}
	fake.UserSays(t, ada, "mine")
	if msgs := s.wait(t, 1); len(msgs) != 1 || msgs[0].Text != "mine" {
		t.Fatalf("got %+v", msgs)
	}
}

// A flood of deliveries from many chats at once: each message reaches the
// sink exactly once and every delivery is answered 200.
func TestWebhookFlood(t *testing.T) {
	fake, _, s, _ := running(t, fakewhatsapp.Options{})
	const chats, per = 20, 10
	var ds []*fakewhatsapp.Delivery
	for i := range chats {
		u := fakewhatsapp.User{WaID: fmt.Sprintf("491700000%02d", i), Name: "u"}
		for j := range per {
			ds = append(ds, fake.Send(u, fake.Text(u, fmt.Sprintf("%s#%d", u.WaID, j))))
		}
	}
	for _, d := range ds {
		d.Wait(t, 30*time.Second)
	}
	msgs := s.wait(t, chats*per)
	seen := map[string]int{}
	for _, m := range msgs {
		seen[m.MessageID]++
	}
	if len(msgs) != chats*per || len(seen) != chats*per {
		t.Fatalf("%d messages with %d distinct ids, want %d once each", len(msgs), len(seen), chats*per)
	}
}

// Wrong methods are refused.
func TestWebhookMethods(t *testing.T) {
	_, _, _, url := running(t, fakewhatsapp.Options{})
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader("{}"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("PUT answered %d, want 405", resp.StatusCode)
	}
}
