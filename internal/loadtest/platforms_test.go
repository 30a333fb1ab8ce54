package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// A Slack message left unacknowledged is delivered again by RedeliverSlack
// (retry_attempt 1), and Redelivered names its token; an acknowledged one is
// neither delivered again nor named.
func TestRedeliverSlackNamesTheRedeliveredTokens(t *testing.T) {
	p, err := StartPlatforms(ModelOptions{Lean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	api := slack.New(SlackBotToken, slack.OptionAPIURL(p.Slack.APIURL()), slack.OptionAppLevelToken(SlackAppToken))
	smc := socketmode.New(api)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- smc.RunContext(ctx) }()
	defer func() { cancel(); <-done }()
	go p.RedeliverSlack(ctx, 40*time.Millisecond)

	const chat = 2 // PlatformOf(2) == Slack
	if PlatformOf(chat) != Slack {
		t.Fatalf("chat %d is not a Slack chat", chat)
	}
	dropped, acked := Token(chat, 0), Token(chat, 1)
	p.Say(chat, dropped)
	p.Say(chat, acked)

	seen := map[string][]int{} // token -> retry attempts delivered
	deadline := time.After(time.Minute)
	for len(seen[dropped]) < 2 {
		select {
		case evt := <-smc.Events:
			if evt.Type != socketmode.EventTypeEventsAPI {
				continue
			}
			outer, ok := evt.Data.(slackevents.EventsAPIEvent)
			if !ok {
				continue
			}
			msg, ok := outer.InnerEvent.Data.(*slackevents.MessageEvent)
			if !ok {
				continue
			}
			tok := strings.TrimSpace(msg.Text)
			seen[tok] = append(seen[tok], evt.Request.RetryAttempt)
			if tok != dropped {
				smc.Ack(*evt.Request)
			}
		case <-deadline:
			t.Fatalf("deliveries seen: %v; want %s twice", seen, dropped)
		}
	}
	if got := seen[dropped]; got[0] != 0 || got[1] != 1 {
		t.Errorf("%s delivered with retry attempts %v, want [0 1]", dropped, got)
	}
	if !p.Redelivered(dropped) {
		t.Errorf("Redelivered(%s) = false for the unacknowledged message", dropped)
	}
	time.Sleep(200 * time.Millisecond) // several redelivery rounds
	if p.Redelivered(acked) || len(seen[acked]) != 1 {
		t.Errorf("acknowledged %s: Redelivered %v, deliveries %v; want false, one", acked, p.Redelivered(acked), seen[acked])
	}
}
