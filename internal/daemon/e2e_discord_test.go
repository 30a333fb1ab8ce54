package daemon_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

const (
	dcToken = "MTA0NTk5OTk5OTk5OTk5OTk5.GfakeX.discord-e2e-secret-token"
	dcUser  = "200000000000000002"
	dcGuild = "300000000000000003"
	dcChan  = "400000000000000004"
	dcDM    = "500000000000000005"
	dcThr   = "600000000000000006"
)

func discordConfig(t *testing.T, llm *fakellm.Server, dc *fakediscord.Server) *config.Config {
	cfg := baseConfig(t, llm)
	discord.ConfigIn(cfg.Channels).Enabled = true
	discord.ConfigIn(cfg.Channels).Token = config.NewSecret(dcToken)
	discord.ConfigIn(cfg.Channels).APIURL = dc.URL()
	discord.ConfigIn(cfg.Channels).GatewayURL = dc.GatewayURL()
	return cfg
}

func startDiscord(t *testing.T, r fakellm.Responder, opts fakediscord.Options) (*fakellm.Server, *fakediscord.Server, *rig) {
	t.Helper()
	llm := fakellm.Start(t, r)
	opts.Token = dcToken
	dc := fakediscord.Start(t, opts)
	dc.AddDM(dcDM)
	dc.AddChannel(dcGuild, dcChan, "general")
	d := startDaemon(t, discordConfig(t, llm, dc), dcToken)
	dc.WaitOnline(t, waitLong)
	return llm, dc, d
}

// checkAllowedMentions fails when any message request could ping everyone or roles.
func checkAllowedMentions(t *testing.T, dc *fakediscord.Server) {
	t.Helper()
	for _, r := range dc.MessageRequests() {
		if r.Method != http.MethodPost {
			continue
		}
		am := r.AllowedMentions
		if am == nil {
			t.Errorf("message create without allowed_mentions: %s", r.Raw)
			continue
		}
		if slices.Contains(am.Parse, "everyone") || slices.Contains(am.Parse, "roles") || len(am.Roles) > 0 {
			t.Errorf("allowed_mentions %+v allows everyone/roles", am)
		}
	}
}

// Issue 5: a DM round trip with streaming edits; the final message is the
// model's whole answer and no create allows @everyone or role pings.
func TestDiscordDMStreamsWithEdits(t *testing.T) {
	const answer = "Hi! This answer streams in small pieces so the message gets edited."
	llm, dc, _ := startDiscord(t, func(*fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: answer, ChunkSize: 4, ChunkDelay: 15 * time.Millisecond}
	}, fakediscord.Options{})

	dc.UserSays(dcDM, dcUser, "hello bot", fakediscord.SayOptions{})
	eventually(t, "the final answer", func() bool {
		s := dc.Sent(dcDM)
		return len(s) == 1 && s[0].Content == answer
	})
	var edits int
	for _, r := range dc.MessageRequests() {
		if r.Method == http.MethodPatch {
			edits++
		}
	}
	if edits == 0 {
		t.Fatal("no PATCH edits: the answer was not streamed")
	}
	if got := userTexts(llm); len(got) != 1 || got[0] != "hello bot" {
		t.Fatalf("model saw %q", got)
	}
	checkAllowedMentions(t, dc)
}

// Issue 5: in a guild channel a message without a mention starts no turn; a
// mention is answered as a reply (message_reference) to it.
func TestDiscordGuildAnswersMentionsWithReply(t *testing.T) {
	llm, dc, _ := startDiscord(t, fakellm.Echo(), fakediscord.Options{})

	dc.UserSays(dcChan, dcUser, "humans talking", fakediscord.SayOptions{GuildID: dcGuild})
	m := dc.UserSays(dcChan, dcUser, fmt.Sprintf("<@%s> are you there?", dc.BotID()), fakediscord.SayOptions{GuildID: dcGuild})
	sent := dcWaitText(t, dc, dcChan, 1, is("echo: are you there?"))
	if sent[0].Content != "echo: are you there?" {
		t.Fatalf("answer %q", sent[0].Content)
	}
	var ref string
	for _, r := range dc.MessageRequests() {
		if r.Method == http.MethodPost && r.MessageReference != nil {
			ref = r.MessageReference.MessageID
		}
	}
	if ref != m.ID {
		t.Fatalf("answer references %q, want the mention %q", ref, m.ID)
	}
	settle()
	if got := userTexts(llm); len(got) != 1 {
		t.Fatalf("model saw %q, want only the mention", got)
	}
	checkAllowedMentions(t, dc)
}

// Issue 5: a thread is its own session and the answer goes into the thread.
func TestDiscordThreadIsItsOwnSession(t *testing.T) {
	_, dc, d := startDiscord(t, fakellm.Echo(), fakediscord.Options{})
	dc.AddThread(dcGuild, dcChan, dcThr, "design")

	dc.UserSays(dcThr, dcUser, fmt.Sprintf("<@%s> thread question", dc.BotID()), fakediscord.SayOptions{GuildID: dcGuild})
	sent := dcWaitText(t, dc, dcThr, 1, is("echo: thread question"))
	if sent[0].Content != "echo: thread question" {
		t.Fatalf("answer %q", sent[0].Content)
	}
	key := "discord:" + dcChan + ":" + dcThr
	eventually(t, "session "+key, func() bool { return sessionExists(t, d, key) })
	if len(dc.Sent(dcChan)) != 0 {
		t.Fatal("the thread's answer went to the parent channel")
	}
}

// Issue 5: a 5,000-character answer arrives as ordered messages of at most
// 2,000 characters with every code fence closed inside its message.
func TestDiscordLongAnswerSplitsWithIntactFences(t *testing.T) {
	answer := longAnswer(5000)
	_, dc, _ := startDiscord(t, fakellm.Text(answer), fakediscord.Options{})

	dc.UserSays(dcDM, dcUser, "long please", fakediscord.SayOptions{})
	var sent []fakediscord.Message
	eventually(t, "the whole answer", func() bool {
		sent = dc.Sent(dcDM)
		return len(sent) > 0 && strings.Contains(sent[len(sent)-1].Content, lastParagraph(answer))
	})
	if len(sent) < 3 {
		t.Fatalf("%d messages, want >= 3", len(sent))
	}
	last := -1
	for i, m := range sent {
		if n := len([]rune(m.Content)); n > 2000 {
			t.Errorf("message %d has %d characters", i, n)
		}
		if !fenceBalanced(m.Content) {
			t.Errorf("message %d breaks a code fence:\n%s", i, m.Content)
		}
		for _, p := range paragraphNo.FindAllStringSubmatch(m.Content, -1) {
			var n int
			fmt.Sscanf(p[1], "%d", &n)
			if n <= last {
				t.Errorf("paragraph %d after %d", n, last)
			}
			last = n
		}
	}
}

// Issue 5: the gateway connection drops; a message sent during the gap is
// replayed on RESUME and answered exactly once.
func TestDiscordResumeAnswersGapMessagesOnce(t *testing.T) {
	llm, dc, _ := startDiscord(t, fakellm.Echo(), fakediscord.Options{})
	dc.UserSays(dcDM, dcUser, "before the drop", fakediscord.SayOptions{})
	dcWaitText(t, dc, dcDM, 1, is("echo: before the drop"))

	dc.DropConnection()
	dc.UserSays(dcDM, dcUser, "during the gap", fakediscord.SayOptions{})
	dc.WaitResumes(t, 1, waitLong)
	sent := dcWaitText(t, dc, dcDM, 2, is("echo: during the gap"))
	if sent[1].Content != "echo: during the gap" {
		t.Fatalf("answer %q", sent[1].Content)
	}
	settle()
	if s := dc.Sent(dcDM); len(s) != 2 {
		t.Fatalf("%d bot messages, want 2", len(s))
	}
	if got := userTexts(llm); len(got) != 2 {
		t.Fatalf("model saw %q, want each message once", got)
	}
}

// Issue 5: heartbeat ACKs stop (a zombie connection); the client reconnects
// and later messages are answered.
func TestDiscordMissingHeartbeatACKsReconnect(t *testing.T) {
	_, dc, _ := startDiscord(t, fakellm.Echo(), fakediscord.Options{HeartbeatInterval: 50 * time.Millisecond})
	before := dc.Connections()
	dc.SetHeartbeatACK(false)
	dc.WaitFor(t, waitLong, "a new gateway connection", func() bool { return dc.Connections() > before })
	dc.SetHeartbeatACK(true)
	dc.WaitOnline(t, waitLong)

	dc.UserSays(dcDM, dcUser, "still there?", fakediscord.SayOptions{})
	sent := dcWaitText(t, dc, dcDM, 1, is("echo: still there?"))
	if sent[0].Content != "echo: still there?" {
		t.Fatalf("answer %q", sent[0].Content)
	}
}

// Issue 5: a 429 with retry_after is waited out and the answer is delivered once.
func TestDiscordRateLimitRetried(t *testing.T) {
	_, dc, _ := startDiscord(t, fakellm.Text("after the limit"), fakediscord.Options{})
	dc.RateLimitNext(1, 0.3, false)

	dc.UserSays(dcDM, dcUser, "hi", fakediscord.SayOptions{})
	sent := dcWaitText(t, dc, dcDM, 1, is("after the limit"))
	if sent[0].Content != "after the limit" {
		t.Fatalf("answer %q", sent[0].Content)
	}
	var posts []fakediscord.MessageRequest
	for _, r := range dc.MessageRequests() {
		if r.Method == http.MethodPost {
			posts = append(posts, r)
		}
	}
	if len(posts) < 2 || posts[0].Status != http.StatusTooManyRequests {
		t.Fatalf("posts %+v: want a 429 then a success", posts)
	}
	if gap := posts[1].At.Sub(posts[0].At); gap < 250*time.Millisecond {
		t.Fatalf("retried after %s, want >= retry_after 300ms", gap)
	}
	settle()
	if s := dc.Sent(dcDM); len(s) != 1 {
		t.Fatalf("%d messages, want 1", len(s))
	}
}

// Issue 5: the bot's own messages and other bots' messages start no turn.
func TestDiscordIgnoresBots(t *testing.T) {
	llm, dc, _ := startDiscord(t, fakellm.Echo(), fakediscord.Options{})
	// The bot's own answer comes back over the gateway as MESSAGE_CREATE;
	// it must not start a turn either.
	dc.UserSays(dcDM, "700000000000000007", "beep boop another bot", fakediscord.SayOptions{Bot: true})
	dc.UserSays(dcDM, dcUser, "a human", fakediscord.SayOptions{})
	sent := dcWaitText(t, dc, dcDM, 1, is("echo: a human"))
	if sent[0].Content != "echo: a human" {
		t.Fatalf("answer %q", sent[0].Content)
	}
	settle()
	if s := dc.Sent(dcDM); len(s) != 1 {
		t.Fatalf("%d bot messages, want 1", len(s))
	}
	if got := userTexts(llm); len(got) != 1 {
		t.Fatalf("model saw %q, want only the human", got)
	}
}

// Issue 5: Discord refuses the MESSAGE_CONTENT intent (close 4014): /readyz
// names the channel, the log explains it, and Telegram keeps answering.
func TestDiscordDisallowedIntentDoesNotStopOthers(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	dc := fakediscord.Start(t, fakediscord.Options{Token: dcToken})
	dc.RefuseMessageContent(true)
	tg := faketelegram.New(t, faketelegram.Options{})
	cfg := discordConfig(t, llm, dc)
	telegram.ConfigIn(cfg.Channels).Enabled = true
	telegram.ConfigIn(cfg.Channels).Token = config.NewSecret(tg.Token())
	telegram.ConfigIn(cfg.Channels).APIURL = tg.URL()
	d := startDaemon(t, cfg, dcToken, tg.Token())

	eventually(t, "the 4014 explanation in the log", func() bool {
		l := strings.ToLower(d.log.String())
		return strings.Contains(l, "4014") && strings.Contains(l, "intent")
	})
	code, body := d.readyz()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "discord") {
		t.Fatalf("/readyz = %d %q, want 503 naming discord", code, body)
	}
	tg.UserSays(tgUser, "telegram still works?")
	sent := tgWaitText(t, tg, tgUser, 1, is("echo: telegram still works?"))
	if sent[0].Plain != "echo: telegram still works?" {
		t.Fatalf("telegram answer %q", sent[0].Plain)
	}
}
