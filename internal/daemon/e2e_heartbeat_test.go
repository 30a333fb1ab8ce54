package daemon_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// With heartbeat.targets empty the heartbeat greets "every allowed direct
// chat": a Telegram group, a Slack channel and a Discord guild channel where
// someone once mentioned the bot are not greeted; the direct chats on the
// same platforms are.
func TestHeartbeatGreetsDirectChatsOnly(t *testing.T) {
	const greeting = "Good morning from the heartbeat!"
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		if strings.Contains(r.LastUserText(), `"action":"greet"`) {
			return fakellm.Response{Content: `{"action":"greet","message":"` + greeting + `"}`}
		}
		return fakellm.Echo()(r)
	})
	tg := faketelegram.New(t, faketelegram.Options{})
	sl := fakeslack.New(t, fakeslack.Options{})
	dc := fakediscord.Start(t, fakediscord.Options{Token: dcToken})
	dc.AddDM(dcDM)
	dc.AddChannel(dcGuild, dcChan, "general")

	cfg := telegramConfig(t, llm, tg)
	cfg.Channels["slack"] = slackConfig(t, llm, sl).Channels["slack"]
	slack.ConfigIn(cfg.Channels).ThreadReplies = false // channel answers (and sessions) at the channel's top level
	cfg.Channels["discord"] = discordConfig(t, llm, dc).Channels["discord"]
	cfg.Heartbeat = config.Heartbeat{Enabled: true, Schedule: "* * * * * *", IdleAfter: 0, MaxPerDay: 1440}
	startDaemon(t, cfg, tg.Token(), sl.BotToken(), sl.AppToken(), slSecret, dcToken)
	sl.WaitConnections(t, 1, waitLong)

	// Group chats where the bot was mentioned, and direct chats.
	tg.UserSays(tgGroup, "@switchboard_bot hello team", faketelegram.InSupergroup("Team"))
	tgWaitText(t, tg, tgGroup, 1, is("echo: hello team"))
	sl.UserMentions(slChannel, slUser, "hello channel")
	slWaitText(t, sl, slChannel, 1, is("echo: hello channel"))
	dc.UserSays(dcChan, dcUser, fmt.Sprintf("<@%s> hello guild", dc.BotID()), fakediscord.SayOptions{GuildID: dcGuild})
	dcWaitText(t, dc, dcChan, 1, is("echo: hello guild"))
	tg.UserSays(tgUser, "hi")
	sl.UserDMs(slUser, "hi")
	dc.UserSays(dcDM, dcUser, "hi", fakediscord.SayOptions{})

	// The direct chats are greeted (the heartbeat ticks every second) ...
	tgWaitText(t, tg, tgUser, 2, is(greeting))
	slWaitText(t, sl, fakeslack.DMChannel(slUser), 2, is(greeting))
	dcWaitText(t, dc, dcDM, 2, is(greeting))
	// ... the group chats are not, over several more ticks.
	time.Sleep(2500 * time.Millisecond)
	for chat, texts := range map[string][]string{
		"telegram group":        sentTexts(tg.Sent(tgGroup), func(m faketelegram.SentMessage) string { return m.Plain }),
		"slack channel":         sentTexts(slackMessages(sl, slChannel), func(m slackView) string { return m.Text }),
		"discord guild channel": sentTexts(dc.Sent(dcChan), func(m fakediscord.Message) string { return m.Content }),
	} {
		for _, s := range texts {
			if strings.Contains(s, greeting) {
				t.Errorf("the %s was greeted: %q", chat, texts)
				break
			}
		}
	}
}

func sentTexts[T any](msgs []T, text func(T) string) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, text(m))
	}
	return out
}
