package daemon_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

const (
	slUser    = "U0ALICE01"
	slChannel = "C0GENERAL"
	slSecret  = "slack-signing-secret-e2e-5566"
)

func slackConfig(t *testing.T, llm *fakellm.Server, sl *fakeslack.Server) *config.Config {
	cfg := baseConfig(t, llm)
	slack.ConfigIn(cfg.Channels).Enabled = true
	slack.ConfigIn(cfg.Channels).BotToken = config.NewSecret(sl.BotToken())
	slack.ConfigIn(cfg.Channels).AppToken = config.NewSecret(sl.AppToken())
	slack.ConfigIn(cfg.Channels).SigningSecret = config.NewSecret(slSecret)
	slack.ConfigIn(cfg.Channels).APIURL = sl.APIURL()
	return cfg
}

func startSlack(t *testing.T, r fakellm.Responder) (*fakellm.Server, *fakeslack.Server, *rig) {
	t.Helper()
	llm := fakellm.Start(t, r)
	sl := fakeslack.New(t, fakeslack.Options{})
	d := startDaemon(t, slackConfig(t, llm, sl), sl.BotToken(), sl.AppToken(), slSecret)
	sl.WaitConnections(t, 1, waitLong)
	return llm, sl, d
}

// slackView is a bot message as the user sees it now (updates applied).
type slackView struct{ TS, ThreadTS, Text string }

// slackMessages replays chat.postMessage and chat.update into what a user sees
// in channel, oldest first.
func slackMessages(sl *fakeslack.Server, channel string) []slackView {
	var out []slackView
	idx := map[string]int{}
	for _, p := range sl.Posted(channel) {
		idx[p.TS] = len(out)
		out = append(out, slackView{TS: p.TS, ThreadTS: p.ThreadTS, Text: p.Text})
	}
	for _, u := range sl.Updates() {
		if i, ok := idx[u.TS]; ok && u.Channel == channel {
			out[i].Text = u.Text
		}
	}
	return out
}

// Issue 6: a DM round trip; the answer streams with chat.update and ends as
// the model's whole text, flat (not threaded).
func TestSlackDMStreamsWithUpdates(t *testing.T) {
	const answer = "Hello from Slack, this answer is streamed in several small updates."
	_, sl, _ := startSlack(t, func(*fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: answer, ChunkSize: 4, ChunkDelay: 15 * time.Millisecond}
	})
	dm := fakeslack.DMChannel(slUser)
	sl.UserDMs(slUser, "hi bot")
	eventually(t, "the final answer", func() bool {
		m := slackMessages(sl, dm)
		return len(m) == 1 && m[0].Text == answer
	})
	if len(sl.Updates()) == 0 {
		t.Fatal("no chat.update calls: the answer was not streamed")
	}
	if m := slackMessages(sl, dm); m[0].ThreadTS != "" {
		t.Fatalf("DM answer threaded under %q", m[0].ThreadTS)
	}
}

// Issue 6: a channel mention is answered in a thread under it, the Slack
// message + app_mention pair produces one answer, and a reply in the thread
// continues the same session.
func TestSlackMentionAnsweredInThreadSession(t *testing.T) {
	llm, sl, d := startSlack(t, fakellm.Echo())
	m, envs := sl.UserMentions(slChannel, slUser, "what is the plan?")
	for _, e := range envs {
		sl.WaitAcked(t, e, waitLong)
	}
	slWaitText(t, sl, slChannel, 1, is("echo: what is the plan?"))
	settle()
	msgs := slackMessages(sl, slChannel)
	if len(msgs) != 1 || msgs[0].ThreadTS != m.TS || msgs[0].Text != "echo: what is the plan?" {
		t.Fatalf("answers %+v: want one threaded echo under %s", msgs, m.TS)
	}
	key := "slack:" + slChannel + ":" + m.TS
	if !sessionExists(t, d, key) {
		t.Fatalf("no session %s in %q", key, sessionKeys(t, d))
	}

	// A mention inside the thread (groups: mention) continues the thread's session.
	reply := fakeslack.Message{Channel: slChannel, User: slUser, Text: sl.Mention() + " and after that?", TS: sl.NextTS(), ThreadTS: m.TS}
	sl.SendEvent(reply.Event())
	sl.SendEvent(reply.AppMention())
	msgs = slWaitText(t, sl, slChannel, 2, is("echo: and after that?"))
	if msgs[1].ThreadTS != m.TS || msgs[1].Text != "echo: and after that?" {
		t.Fatalf("thread reply answer %+v", msgs[1])
	}
	// The second turn saw the first exchange as history: one session.
	req := llm.LastRequest()
	var history string
	for _, msg := range req.Body.Messages {
		history += fakellm.MessageText(msg) + "\n"
	}
	if !strings.Contains(history, "echo: what is the plan?") {
		t.Fatalf("the thread reply's turn did not see the thread's history:\n%s", history)
	}
	if n := llm.RequestCount(); n != 2 {
		t.Fatalf("model requests %d, want 2", n)
	}

	// In a thread the bot is answering in, a plain reply is addressed to it.
	plain := fakeslack.Message{Channel: slChannel, User: slUser, Text: "one more thing", TS: sl.NextTS(), ThreadTS: m.TS}
	sl.SendEvent(plain.Event())
	msgs = slWaitText(t, sl, slChannel, 3, is("echo: one more thing"))
	if msgs[2].ThreadTS != m.TS {
		t.Fatalf("plain thread reply answered outside the thread: %+v", msgs[2])
	}
	// A plain message in the channel itself is still not for the bot.
	other := fakeslack.Message{Channel: slChannel, User: slUser, Text: "lunch?", TS: sl.NextTS()}
	sl.SendEvent(other.Event())
	settle()
	if n := llm.RequestCount(); n != 3 {
		t.Fatalf("model requests %d, want 3 (the unaddressed channel message must not reach it)", n)
	}
}

// Issue 6: Slack retrying an envelope (retry_attempt 1) produces no second answer.
func TestSlackRedeliveredEnvelopeAnsweredOnce(t *testing.T) {
	llm, sl, _ := startSlack(t, fakellm.Echo())
	_, env := sl.UserDMs(slUser, "just once")
	sl.WaitAcked(t, env, waitLong)
	slWaitText(t, sl, fakeslack.DMChannel(slUser), 1, is("echo: just once"))
	again := sl.Redeliver(env)
	sl.WaitAcked(t, again, waitLong)
	settle()
	if n := len(sl.Posts()); n != 1 {
		t.Fatalf("%d posts, want 1", n)
	}
	if n := llm.RequestCount(); n != 1 {
		t.Fatalf("model requests %d, want 1", n)
	}
}

// Issue 6: Slack asks for a reconnect; the adapter reconnects and later
// events are answered.
func TestSlackDisconnectReconnects(t *testing.T) {
	_, sl, _ := startSlack(t, fakellm.Echo())
	sl.Disconnect("refresh_requested")
	sl.WaitConnections(t, 2, waitLong)
	sl.UserDMs(slUser, "after the refresh")
	slWaitText(t, sl, fakeslack.DMChannel(slUser), 1, is("echo: after the refresh"))
	if m := slackMessages(sl, fakeslack.DMChannel(slUser)); len(m) != 1 || m[0].Text != "echo: after the refresh" {
		t.Fatalf("answers %+v", m)
	}
	if n := sl.MaxLiveConnections(); n > 2 {
		t.Fatalf("%d live connections at once", n)
	}
}

// Issue 6: HTTP Events API mode: url_verification is answered, a valid
// signature is answered, a bad signature or a stale timestamp is refused with
// 401 and starts no turn.
func TestSlackHTTPModeVerifiesSignatures(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	sl := fakeslack.New(t, fakeslack.Options{})
	cfg := slackConfig(t, llm, sl)
	slack.ConfigIn(cfg.Channels).Mode = "http"
	d := startDaemon(t, cfg, sl.BotToken(), sl.AppToken(), slSecret)
	hook := d.url() + "/webhooks/slack/events"
	// Until auth.test has answered the adapter refuses events with 503.
	eventually(t, "/readyz 200", func() bool { c, _ := d.readyz(); return c == http.StatusOK })

	post := func(req *http.Request) (int, string) {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(fakeslack.SignedRequest(hook, slSecret, time.Now(), fakeslack.URLVerificationBody("chal-123"))); code != 200 || !strings.Contains(body, "chal-123") {
		t.Fatalf("url_verification: %d %q", code, body)
	}

	msg := func(text string) []byte {
		m := fakeslack.Message{Channel: fakeslack.DMChannel(slUser), ChannelType: "im", User: slUser, Text: text, TS: sl.NextTS()}
		b, _ := sl.EventCallback(m.Event())
		return b
	}
	for _, tt := range []struct {
		name   string
		secret string
		at     time.Time
	}{
		{"bad signature", "not-the-secret", time.Now()},
		{"stale timestamp", slSecret, time.Now().Add(-10 * time.Minute)},
	} {
		if code, _ := post(fakeslack.SignedRequest(hook, tt.secret, tt.at, msg("forged "+tt.name))); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", tt.name, code)
		}
	}
	if n := llm.RequestCount(); n != 0 {
		t.Fatalf("refused requests reached the model: %q", userTexts(llm))
	}

	if code, _ := post(fakeslack.SignedRequest(hook, slSecret, time.Now(), msg("signed hello"))); code != 200 {
		t.Fatalf("valid request: status %d", code)
	}
	slWaitText(t, sl, fakeslack.DMChannel(slUser), 1, is("echo: signed hello"))
	settle()
	if got := userTexts(llm); len(got) != 1 {
		t.Fatalf("model saw %q, want only the signed message", got)
	}
}

// Issue 6: a 429 with Retry-After delays the post and the answer arrives once.
func TestSlackRateLimitHonoursRetryAfter(t *testing.T) {
	_, sl, _ := startSlack(t, fakellm.Text("worth the wait"))
	sl.RateLimitNext("chat.postMessage", 1, 1)
	sent := time.Now()
	sl.UserDMs(slUser, "hi")
	slWaitText(t, sl, fakeslack.DMChannel(slUser), 1, is("worth the wait"))
	if waited := time.Since(sent); waited < 900*time.Millisecond {
		t.Fatalf("posted after %s, before Retry-After: 1", waited)
	}
	settle()
	if n := sl.Calls("chat.postMessage"); n != 2 {
		t.Fatalf("chat.postMessage calls %d, want 2 (429, then the post)", n)
	}
	if m := slackMessages(sl, fakeslack.DMChannel(slUser)); len(m) != 1 || m[0].Text != "worth the wait" {
		t.Fatalf("answers %+v", m)
	}
}

// Issue 6: a revoked bot token (invalid_auth) is a clear error in the log and
// /readyz, and Telegram keeps answering.
func TestSlackInvalidAuthDoesNotStopOthers(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	sl := fakeslack.New(t, fakeslack.Options{})
	sl.SetAuthError("invalid_auth", "")
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := slackConfig(t, llm, sl)
	telegram.ConfigIn(cfg.Channels).Enabled = true
	telegram.ConfigIn(cfg.Channels).Token = config.NewSecret(tg.Token())
	telegram.ConfigIn(cfg.Channels).APIURL = tg.URL()
	d := startDaemon(t, cfg, sl.BotToken(), sl.AppToken(), slSecret, tg.Token())

	eventually(t, "invalid_auth in the log", func() bool { return strings.Contains(d.log.String(), "invalid_auth") })
	code, body := d.readyz()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "slack") {
		t.Fatalf("/readyz = %d %q, want 503 naming slack", code, body)
	}
	tg.UserSays(tgUser, "anyone home?")
	tgWaitText(t, tg, tgUser, 1, is("echo: anyone home?"))
}
