package whatsapp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

func out(to, text string) channels.Outgoing {
	return channels.Outgoing{Target: channels.Target{Channel: Name, ChatID: to}, Text: text, Plain: text, Nonce: "turn-1/0"}
}

// A sent answer reaches the user as one text message with the nonce as
// callback data; a chat id without '+' or with separators works too.
func TestSendText(t *testing.T) {
	fake, a, _, _ := running(t, fakewhatsapp.Options{})
	fake.UserSays(t, ada, "hi")
	for _, to := range []string{"+4915112345678", "4915112345678"} {
		id, err := a.Send(context.Background(), out(to, "*Hello* there"))
		if err != nil || !strings.HasPrefix(id, "wamid.") {
			t.Fatalf("Send to %s: id %q, err %v", to, id, err)
		}
	}
	sent := fake.Sent(ada.WaID)
	if len(sent) != 2 || sent[0].Text != "*Hello* there" || sent[0].Type != "text" || sent[0].CallbackData != "turn-1/0" {
		t.Fatalf("the user got %+v", sent)
	}
}

// Graph's errors map to the shared kinds: throttling → RateLimited (with
// Retry-After when given), transient codes → Temporary, a 5xx without an
// error body → Ambiguous, everything else → Permanent.
func TestSendErrorsClassified(t *testing.T) {
	fake, a, _, _ := running(t, fakewhatsapp.Options{})
	fake.UserSays(t, ada, "hi")
	cases := []struct {
		name  string
		f     fakewhatsapp.Failure
		kind  channels.SendErrorKind
		after time.Duration
	}{
		{"throughput", fakewhatsapp.Failure{HTTPStatus: 400, Code: 130429, Message: "(#130429) Rate limit hit"}, channels.KindRateLimited, 5 * time.Second},
		{"pair limit", fakewhatsapp.Failure{HTTPStatus: 400, Code: 131056, Message: "(#131056) Pair rate limit hit"}, channels.KindRateLimited, 6 * time.Second},
		{"retry-after", fakewhatsapp.Failure{HTTPStatus: 429, Code: 80007, Message: "rate", RetryAfter: 7}, channels.KindRateLimited, 7 * time.Second},
		{"transient", fakewhatsapp.Failure{HTTPStatus: 500, Code: 131000, Message: "Something went wrong"}, channels.KindTemporary, 0},
		{"bare 502", fakewhatsapp.Failure{HTTPStatus: 502}, channels.KindAmbiguous, 0},
		{"token", fakewhatsapp.Failure{HTTPStatus: 401, Code: 190, Message: "Error validating access token"}, channels.KindPermanent, 0},
		{"bad recipient", fakewhatsapp.Failure{HTTPStatus: 400, Code: 131026, Message: "Message undeliverable"}, channels.KindPermanent, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.FailNext(tc.f)
			_, err := a.Send(context.Background(), out("+"+ada.WaID, "hello"))
			kind, after := channels.ClassifyError(err)
			if kind != tc.kind || after != tc.after {
				t.Errorf("got %s after %s (%v), want %s after %s", kind, after, err, tc.kind, tc.after)
			}
		})
	}
	if n := len(fake.Sent(ada.WaID)); n != 0 {
		t.Errorf("%d messages reached the user although every send was refused", n)
	}
}

// The 24-hour window: to a user who has not written for a day a chat answer
// fails for good with the reason; a greeting goes as the configured
// template (its one parameter flattened); a reminder without a template
// fails for good, naming what is missing.
func TestSendOutsideWindow(t *testing.T) {
	clk := newClock()
	fake, a, _, _ := running(t, fakewhatsapp.Options{Now: clk.Now}, func(o *Options) {
		o.Templates = map[string]Template{"greeting": {Name: "daily_hello", Language: "en_US"}}
	})
	fake.UserSays(t, ada, "hi")
	clk.Add(25 * time.Hour)
	ctx := context.Background()
	cases := []struct {
		name    string
		ctx     context.Context
		wantErr string
	}{
		{"chat answer", ctx, "more than 24 hours old"},
		{"reminder without template", channels.WithPurpose(ctx, channels.PurposeReminder), "no template is configured"},
		{"greeting with template", channels.WithPurpose(ctx, channels.PurposeGreeting), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := a.Send(tc.ctx, out("+"+ada.WaID, "Good *morning*!\n\nHow are    you?"))
			if tc.wantErr == "" {
				if err != nil || id == "" {
					t.Fatalf("Send: id %q, err %v", id, err)
				}
				return
			}
			if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v (%s), want a permanent error saying %q", err, kind, tc.wantErr)
			}
		})
	}
	sent := fake.Sent(ada.WaID)
	if len(sent) != 1 || sent[0].Type != "template" || sent[0].Template != "daily_hello" || sent[0].Language != "en_US" ||
		sent[0].Text != "Good *morning*! How are you?" {
		t.Fatalf("the user got %+v, want only the greeting template with its text flattened", sent)
	}
}

// Typing marks the chat's last message read with the indicator; a chat
// without a received message shows nothing and stop is harmless.
func TestTypingNeedsAReceivedMessage(t *testing.T) {
	fake, a, _, _ := running(t, fakewhatsapp.Options{})
	stop := a.StartTyping(context.Background(), channels.Target{Channel: Name, ChatID: "+4900000000"})
	stop()
	stop()
	d := fake.UserSays(t, ada, "hi")
	stop = a.StartTyping(context.Background(), channels.Target{Channel: Name, ChatID: "+" + ada.WaID})
	fake.WaitFor(t, 20*time.Second, "a read receipt with typing", func() bool { return len(fake.Reads()) > 0 })
	stop()
	for _, r := range fake.Reads() {
		if r.MessageID != d.IDs[0] || !r.Typing {
			t.Errorf("read receipt %+v, want %s with typing", r, d.IDs[0])
		}
	}
}

// WhatsApp formatting: no HTML entities, links as "label (url)", code
// fences kept, every chunk under the limit.
func TestFormatDialect(t *testing.T) {
	cases := []struct{ md, want string }{
		{"**bold** and _it_ & <tag>", "*bold* and _it_ & <tag>"},
		{"see [the docs](https://example.com/a?b=1&c=2)", "see the docs (https://example.com/a?b=1&c=2)"},
		{"<https://example.com>", "https://example.com"},
		{"```go\nif a < b && c > d {}\n```", "```\nif a < b && c > d {}\n```"},
		{"~~gone~~ `x<y`", "~gone~ `x<y`"},
	}
	for _, tc := range cases {
		got := formatChunks(tc.md, ChunkLimit)
		if len(got) != 1 || got[0].Text != tc.want {
			t.Errorf("Format(%q) = %+v, want %q", tc.md, got, tc.want)
		}
	}
	long := strings.Repeat("a & b < c, and a [link](https://example.com/x). ", 400)
	for i, c := range formatChunks(long, ChunkLimit) {
		if n := len([]rune(c.Text)); n > ChunkLimit {
			t.Errorf("chunk %d has %d characters, over %d", i, n, ChunkLimit)
		}
	}
}

// Run refuses rejected credentials with a clear error.
func TestRunRejectedToken(t *testing.T) {
	fake, a, _ := newRig(t, fakewhatsapp.Options{}, func(o *Options) { o.AccessToken = "EAAwrong" })
	_ = fake
	err := a.Run(context.Background(), newSink())
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "EAAwrong") {
		t.Fatalf("Run: %v; want a 401 error without the token", err)
	}
}
