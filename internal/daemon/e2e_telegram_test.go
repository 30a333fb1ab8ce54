package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Telegram ids used by the stories.
const (
	tgUser  = int64(4242)     // a private chat is the user's id
	tgGroup = int64(-1001234) // a supergroup
)

// telegramConfig enables the Telegram channel against tg.
func telegramConfig(t *testing.T, llm *fakellm.Server, tg *faketelegram.Server) *config.Config {
	cfg := baseConfig(t, llm)
	telegram.ConfigIn(cfg.Channels).Enabled = true
	telegram.ConfigIn(cfg.Channels).Token = config.NewSecret(tg.Token())
	telegram.ConfigIn(cfg.Channels).APIURL = tg.URL()
	return cfg
}

func startTelegram(t *testing.T, r fakellm.Responder) (*fakellm.Server, *faketelegram.Server, *rig) {
	t.Helper()
	llm := fakellm.Start(t, r)
	tg := faketelegram.New(t, faketelegram.Options{})
	d := startDaemon(t, telegramConfig(t, llm, tg), tg.Token())
	return llm, tg, d
}

// Issues 4 and 27: an answer streams in while it is written. In a private
// chat it is previewed with sendMessageDraft (nothing that stays) and sent
// once with sendMessage at the end: no message is ever edited, so a crash
// mid-answer can leave no fragment. A server that does not know the method
// (older than Bot API 9.3) answers it 404 once per process; from then on,
// and in groups always, the answer streams by editing a draft message.
func TestTelegramStreamingPreviewsInPrivateChatsEditsElsewhere(t *testing.T) {
	const answer = "Hello Alice! Here is a streamed answer that arrives in many small pieces."
	cases := []struct {
		name       string
		noDrafts   bool
		chat       int64
		say        []faketelegram.SayOption
		text       string
		wantDrafts bool // previews shown, no edits
	}{
		{name: "private chat previews", chat: tgUser, text: "hi there", wantDrafts: true},
		{name: "older server edits", noDrafts: true, chat: tgUser, text: "hi there"},
		{name: "group edits", chat: tgGroup, say: []faketelegram.SayOption{faketelegram.InSupergroup("Team")},
			text: "@switchboard_bot hi there"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.Start(t, func(*fakellm.Request) fakellm.Response {
				return fakellm.Response{Content: answer, ChunkSize: 4, ChunkDelay: 15 * time.Millisecond}
			})
			tg := faketelegram.New(t, faketelegram.Options{NoDrafts: tc.noDrafts})
			startDaemon(t, telegramConfig(t, llm, tg), tg.Token())

			for round := 1; round <= 2; round++ {
				tg.UserSays(tc.chat, tc.text, tc.say...)
				eventually(t, "the full answer in the chat", func() bool {
					s := tg.Sent(tc.chat)
					return len(s) == round && s[round-1].Plain == answer
				})
			}
			settle()
			sent := tg.Sent(tc.chat)
			if len(sent) != 2 {
				t.Fatalf("bot messages = %d, want exactly 2 (one per answer): %+v", len(sent), sent)
			}
			drafts, edits := tg.Drafts(tc.chat), tg.Requests("editMessageText")
			draftCalls := len(tg.Requests("sendMessageDraft"))
			if tc.wantDrafts {
				if len(drafts) < 2 || len(edits) != 0 {
					t.Fatalf("%d previews and %d edits: want the answers previewed, never edited", len(drafts), len(edits))
				}
				if last := drafts[len(drafts)-1]; !strings.HasPrefix(answer, last.Plain) || last.DraftID == 0 {
					t.Fatalf("last preview %+v: want a beginning of the answer under a non-zero draft id", last)
				}
				if sent[0].Edits != 0 || sent[1].Edits != 0 {
					t.Fatalf("messages were edited: %+v", sent)
				}
				return
			}
			if len(edits) == 0 || len(drafts) != 0 {
				t.Fatalf("%d edits and %d previews: want the answer streamed by edits", len(edits), len(drafts))
			}
			if tc.noDrafts && draftCalls != 1 {
				t.Fatalf("sendMessageDraft called %d times on a server that answered 404: want once per process", draftCalls)
			}
			if !tc.noDrafts && draftCalls != 0 {
				t.Fatalf("sendMessageDraft called %d times in a group: previews are for private chats", draftCalls)
			}
		})
	}
}

// Issue 4: in a group, a message that neither mentions nor replies to the
// bot starts no turn; an @mention and a reply to the bot are answered as
// replies to the user's message.
func TestTelegramGroupAnswersOnlyMentionsAndReplies(t *testing.T) {
	llm, tg, _ := startTelegram(t, fakellm.Echo())

	ignored := tg.UserSays(tgGroup, "just chatting among humans", faketelegram.InSupergroup("Team"))
	mention := tg.UserSays(tgGroup, "@switchboard_bot what is up?", faketelegram.InSupergroup("Team"))
	sent := tgWaitText(t, tg, tgGroup, 1, is("echo: what is up?"))
	if sent[0].ReplyToMessageID != mention.MessageID {
		t.Fatalf("answer replies to %d, want the mention %d", sent[0].ReplyToMessageID, mention.MessageID)
	}
	if !strings.Contains(sent[0].Plain, "what is up?") || strings.Contains(sent[0].Plain, "@switchboard_bot") {
		t.Fatalf("answer %q: want the echo of the mention without the bot's @name", sent[0].Plain)
	}
	for _, u := range userTexts(llm) {
		if strings.Contains(u, ignored.Text) {
			t.Fatalf("the unmentioned message reached the model: %q", u)
		}
	}

	reply := tg.UserSays(tgGroup, "and tell me more", faketelegram.InSupergroup("Team"), faketelegram.ReplyTo(sent[0].MessageID))
	sent = tgWaitText(t, tg, tgGroup, 2, has("and tell me more"))
	if sent[1].ReplyToMessageID != reply.MessageID || !strings.Contains(sent[1].Plain, "and tell me more") {
		t.Fatalf("reply-to-bot answer = %+v, want a reply to %d echoing it", sent[1], reply.MessageID)
	}
	// The replied-to message reaches the model as quoted, untrusted content.
	last := userTexts(llm)[len(userTexts(llm))-1]
	if !strings.Contains(last, `<quoted-message from="you (the assistant)" trust="untrusted">`) ||
		!strings.Contains(last, "echo: what is up?") {
		t.Fatalf("the model did not get the quoted message wrapped as untrusted: %q", last)
	}
	settle()
	if n := llm.RequestCount(); n != 2 {
		t.Fatalf("model requests = %d, want 2 (the ignored message must not start a turn): %q", n, userTexts(llm))
	}
}

// Issue 4: a forum topic is its own session, answered in the topic.
func TestTelegramForumTopicIsItsOwnSession(t *testing.T) {
	_, tg, d := startTelegram(t, fakellm.Echo())
	topic := tg.CreateTopic(tgGroup, "Ideas")

	tg.UserSays(tgGroup, "@switchboard_bot idea one", faketelegram.InTopic(topic))
	sent := tgWaitText(t, tg, tgGroup, 1, is("echo: idea one"))
	if sent[0].ThreadID != topic {
		t.Fatalf("answer in thread %d, want topic %d", sent[0].ThreadID, topic)
	}
	key := fmt.Sprintf("telegram:%d:%d", tgGroup, topic)
	eventually(t, "session "+key, func() bool { return sessionExists(t, d, key) })
	if sessionExists(t, d, fmt.Sprintf("telegram:%d", tgGroup)) {
		t.Fatalf("the topic message was stored in the group's session too: %q", sessionKeys(t, d))
	}
}

var paragraphNo = regexp.MustCompile(`Paragraph (\d{3})`)

// Issue 4: a 10,000-character answer arrives as ordered messages, each under
// Telegram's 4096 limit, with every code block whole in one message.
func TestTelegramLongAnswerArrivesInOrderedChunks(t *testing.T) {
	answer := longAnswer(10000)
	_, tg, _ := startTelegram(t, fakellm.Text(answer))

	tg.UserSays(tgUser, "write a lot")
	var sent []faketelegram.SentMessage
	eventually(t, "the whole long answer", func() bool {
		sent = tg.Sent(tgUser)
		return len(sent) > 0 && strings.Contains(sent[len(sent)-1].Plain, lastParagraph(answer))
	})
	if len(sent) < 3 {
		t.Fatalf("a %d-char answer arrived in %d message(s), want >= 3", len(answer), len(sent))
	}
	last := -1
	for i, m := range sent {
		if n := len(utf16.Encode([]rune(m.Plain))); n > 4096 {
			t.Errorf("message %d is %d UTF-16 units, over 4096", i, n)
		}
		if strings.Count(m.Text, "<pre") != strings.Count(m.Text, "</pre>") {
			t.Errorf("message %d breaks a code block: %q", i, m.Text)
		}
		for _, p := range paragraphNo.FindAllStringSubmatch(m.Plain, -1) {
			var n int
			fmt.Sscanf(p[1], "%d", &n)
			if n <= last {
				t.Errorf("paragraph %d after %d: chunks out of order", n, last)
			}
			last = n
		}
	}
	// Every code line arrived whole.
	all := ""
	for _, m := range sent {
		all += m.Plain + "\n"
	}
	if got, want := strings.Count(all, `fmt.Println("line of code number xxxxx")`), strings.Count(answer, `fmt.Println("line of code number xxxxx")`); got != want {
		t.Errorf("code lines delivered %d, want %d", got, want)
	}
}

func lastParagraph(s string) string {
	m := paragraphNo.FindAllString(s, -1)
	return m[len(m)-1]
}

// Issue 4: when Telegram rejects the HTML ("can't parse entities"), the same
// answer is sent again as plain text and arrives once.
func TestTelegramParseEntitiesErrorResendsPlainText(t *testing.T) {
	_, tg, _ := startTelegram(t, fakellm.Text("Here is **bold** and `code`."))
	tg.FailNext("sendMessage", 1, faketelegram.CantParseEntities())

	tg.UserSays(tgUser, "format something")
	sent := tgWaitText(t, tg, tgUser, 1, has("bold", "code"))
	eventually(t, "the plain-text answer", func() bool {
		s := tg.Sent(tgUser)
		return len(s) == 1 && strings.Contains(s[0].Plain, "bold") && strings.Contains(s[0].Plain, "code")
	})
	reqs := tg.Requests("sendMessage")
	if len(reqs) < 2 {
		t.Fatalf("sendMessage calls = %d, want the rejected HTML one and a plain resend", len(reqs))
	}
	if reqs[0].Fields["parse_mode"] != "HTML" || reqs[1].Fields["parse_mode"] != "" {
		t.Fatalf("parse modes %q then %q, want HTML then plain", reqs[0].Fields["parse_mode"], reqs[1].Fields["parse_mode"])
	}
	settle()
	if s := tg.Sent(tgUser); len(s) != 1 {
		t.Fatalf("bot messages = %d, want 1: %+v (first %+v)", len(s), s, sent[0])
	}
}

// Issue 4: a 429 with retry_after delays the send by that long and the
// answer is delivered exactly once.
func TestTelegramFloodControlWaitsRetryAfter(t *testing.T) {
	_, tg, _ := startTelegram(t, fakellm.Text("patience pays"))
	tg.FailNext("sendMessage", 1, faketelegram.TooManyRequests(1))

	tg.UserSays(tgUser, "hello")
	sent := tgWaitText(t, tg, tgUser, 1, is("patience pays"))
	if sent[0].Plain != "patience pays" {
		t.Fatalf("answer %q", sent[0].Plain)
	}
	reqs := tg.Requests("sendMessage")
	if len(reqs) != 2 {
		t.Fatalf("sendMessage calls = %d, want 2 (429 then success)", len(reqs))
	}
	if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 900*time.Millisecond {
		t.Fatalf("retried after %s, want at least retry_after=1s", gap)
	}
	settle()
	if s := tg.Sent(tgUser); len(s) != 1 {
		t.Fatalf("bot messages = %d, want 1", len(s))
	}
}

// Issue 4: webhook mode registers the webhook with its secret; a delivery
// with the right secret is answered, a wrong secret is refused with 401 and
// starts no turn.
func TestTelegramWebhookChecksSecret(t *testing.T) {
	const secret = "webhook-secret-value-7788"
	llm := fakellm.Start(t, fakellm.Echo())
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)
	telegram.ConfigIn(cfg.Channels).Mode = "webhook"
	telegram.ConfigIn(cfg.Channels).WebhookURL = "https://bot.example.com/webhooks/telegram"
	telegram.ConfigIn(cfg.Channels).WebhookSecret = config.NewSecret(secret)
	d := startDaemon(t, cfg, tg.Token(), secret)

	url, got := tg.WaitWebhook(t, waitLong)
	if url != telegram.ConfigIn(cfg.Channels).WebhookURL || got != secret {
		t.Fatalf("setWebhook(%q, secret ok=%v)", url, got == secret)
	}
	ctx := context.Background()
	hook := d.url() + "/webhooks/telegram"

	bad := tg.NewMessage(tgUser, "sneaky")
	status, err := tg.PostWebhook(ctx, hook, "wrong-secret", faketelegram.Update{Message: &bad})
	if err != nil || status != http.StatusUnauthorized {
		t.Fatalf("wrong secret: status %d, err %v; want 401", status, err)
	}
	good := tg.NewMessage(tgUser, "via webhook")
	status, err = tg.PostWebhook(ctx, hook, secret, faketelegram.Update{Message: &good})
	if err != nil || status != http.StatusOK {
		t.Fatalf("right secret: status %d, err %v; want 200", status, err)
	}
	sent := tgWaitText(t, tg, tgUser, 1, is("echo: via webhook"))
	if sent[0].Plain != "echo: via webhook" {
		t.Fatalf("answer %q", sent[0].Plain)
	}
	settle()
	if got := userTexts(llm); len(got) != 1 {
		t.Fatalf("model saw %q, want only the authenticated message", got)
	}
}

// Issue 4: Telegram delivering the same update twice produces one answer.
func TestTelegramRedeliveredUpdateAnsweredOnce(t *testing.T) {
	llm, tg, _ := startTelegram(t, fakellm.Echo())

	m := tg.NewMessage(tgUser, "only once please")
	id := tg.SendUpdate(faketelegram.Update{Message: &m})
	tgWaitText(t, tg, tgUser, 1, is("echo: only once please"))
	tg.WaitConfirmed(t, id, waitLong)
	tg.SendUpdate(faketelegram.Update{UpdateID: id, Message: &m})
	tg.WaitDelivered(t, id, 2, waitLong)
	tg.WaitConfirmed(t, id, waitLong)
	settle()
	if s := tg.Sent(tgUser); len(s) != 1 {
		t.Fatalf("bot messages = %d, want 1", len(s))
	}
	if n := llm.RequestCount(); n != 1 {
		t.Fatalf("model requests = %d, want 1", n)
	}
}

// Issue 4: the daemon stops while the model is still answering; a new daemon
// on the same data dir finishes the turn from the inbox: exactly one answer.
func TestTelegramRestartMidTurnAnswersOnce(t *testing.T) {
	var stalled atomic.Bool
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		if !stalled.Load() {
			return fakellm.Response{Content: "never seen", StallAfter: 1}
		}
		return fakellm.Response{Content: "answer after restart"}
	})
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := telegramConfig(t, llm, tg)

	first := startDaemonWithLog(t, cfg, &logBuf{}, 100*time.Millisecond, tg.Token())
	tg.UserSays(tgUser, "survive a restart")
	eventually(t, "the model request", func() bool { return llm.RequestCount() == 1 })
	first.stop()
	if s := tg.Sent(tgUser); len(s) != 0 {
		t.Fatalf("messages before the restart: %+v", s)
	}

	stalled.Store(true)
	start := time.Now()
	second := startDaemon(t, cfg, tg.Token())
	eventually(t, "the replayed answer", func() bool {
		if len(tg.Sent(tgUser)) > 0 {
			return true
		}
		if time.Since(start) > 3*time.Second {
			h, _ := second.d.Store().LoadHistory(context.Background(), "telegram:4242", 0)
			t.Fatalf("no answer; model requests %q; history %+v", userTexts(llm), h)
		}
		return false
	})
	sent := tgWaitText(t, tg, tgUser, 1, is("answer after restart"))
	if sent[0].Plain != "answer after restart" {
		t.Fatalf("answer %q", sent[0].Plain)
	}
	settle()
	if s := tg.Sent(tgUser); len(s) != 1 {
		t.Fatalf("bot messages = %d, want exactly 1: %+v", len(s), s)
	}
	if got := userTexts(llm); len(got) != 2 || got[1] != "survive a restart" {
		t.Fatalf("model requests %q: want the replayed message", got)
	}
}

// Issue 4: a photo reaches the model as an image part (a data URL).
func TestTelegramPhotoReachesModelAsImage(t *testing.T) {
	llm, tg, _ := startTelegram(t, fakellm.Text("a red square"))
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for x := 0; x < 8; x++ {
		for y := 0; y < 8; y++ {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	tg.UserSendsPhoto(tgUser, buf.Bytes(), "what is this?")
	tgWaitText(t, tg, tgUser, 1, is("a red square"))

	req := llm.LastRequest()
	last := req.Body.Messages[len(req.Body.Messages)-1]
	var sawImage, sawCaption bool
	for _, p := range last.MultiContent {
		if p.ImageURL != nil && strings.HasPrefix(p.ImageURL.URL, "data:image/jpeg;base64,") {
			sawImage = true
		}
		if strings.Contains(p.Text, "what is this?") {
			sawCaption = true
		}
	}
	if !sawImage || !sawCaption {
		t.Fatalf("last model message parts %+v: want the caption and a data:image/jpeg image_url", last.MultiContent)
	}
}

// Issue 4: the typing indicator stops when a turn ends, after a success and
// after a failure: no sendChatAction follows the answer.
func TestTelegramTypingStopsAfterSuccessAndFailure(t *testing.T) {
	for _, tt := range []struct {
		name string
		resp fakellm.Response
		want string
	}{
		{"success", fakellm.Response{Content: "done thinking"}, "done thinking"},
		{"failure", fakellm.Response{Status: http.StatusBadRequest, ErrorMessage: "model exploded"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.resp
			// The model answers once "typing…" is up: a turn longer than the
			// adapter's typing delay (a quick one shows no indicator).
			var fake atomic.Pointer[faketelegram.Server]
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			_, tg, _ := startTelegram(t, func(*fakellm.Request) fakellm.Response {
				if f := fake.Load(); f != nil && !f.AwaitRequests(ctx, "sendChatAction", 1) {
					return fakellm.Response{Status: http.StatusGatewayTimeout, ErrorMessage: "no typing indicator within the wait"}
				}
				return resp
			})
			fake.Store(tg)
			tg.UserSays(tgUser, "think hard")
			sent := tgWaitText(t, tg, tgUser, 1, func(s string) bool { return s != "" && (tt.want == "" || s == tt.want) })
			if tt.want != "" && sent[0].Plain != tt.want {
				t.Fatalf("answer %q, want %q", sent[0].Plain, tt.want)
			}
			if tt.want == "" && sent[0].Plain == "" {
				t.Fatalf("failure produced an empty message")
			}
			if n := len(tg.Requests("sendChatAction")); n == 0 {
				t.Fatalf("no typing indicator during the turn")
			}
			sends := tg.Requests("sendMessage")
			answeredAt := sends[len(sends)-1].Time
			for _, ed := range tg.Requests("editMessageText") {
				if ed.Time.After(answeredAt) {
					answeredAt = ed.Time
				}
			}
			settle()
			for _, a := range tg.Requests("sendChatAction") {
				if a.Time.After(answeredAt) {
					t.Fatalf("sendChatAction at %s after the answer at %s: typing not stopped", a.Time, answeredAt)
				}
			}
		})
	}
}
