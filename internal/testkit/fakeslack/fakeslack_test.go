package fakeslack

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// Sign must produce what slack-go's own verifier accepts, and nothing else.
func TestSignMatchesSlackGoVerifier(t *testing.T) {
	body := []byte(`{"type":"event_callback","event":{"type":"message"}}`)
	for _, tt := range []struct {
		name, secret string
		ok           bool
	}{{"same secret", "s3cret", true}, {"other secret", "other", false}} {
		t.Run(tt.name, func(t *testing.T) {
			req := SignedRequest("http://127.0.0.1/", tt.secret, time.Now(), body)
			v, err := slack.NewSecretsVerifier(req.Header, "s3cret")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(req.Body)
			_, _ = v.Write(b)
			if err := v.Ensure(); (err == nil) != tt.ok {
				t.Fatalf("Ensure() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// The real socketmode client connects, gets hello, receives an envelope the
// fake queued before it connected, and its ack is recorded.
func TestSocketModeClientAgainstFake(t *testing.T) {
	f := New(t, Options{})
	_, env := f.UserDMs("U1", "queued before connect")

	api := slack.New(f.BotToken(), slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken(f.AppToken()))
	smc := socketmode.New(api, socketmode.OptionPingInterval(2*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- smc.RunContext(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.After(5 * time.Second)
	var sawHello bool
	for {
		select {
		case evt := <-smc.Events:
			switch evt.Type {
			case socketmode.EventTypeHello:
				sawHello = true
			case socketmode.EventTypeEventsAPI:
				if !sawHello {
					t.Fatal("event before hello")
				}
				if evt.Request.EnvelopeID != env || evt.Request.RetryAttempt != 0 {
					t.Fatalf("request %+v", evt.Request)
				}
				if err := smc.Ack(*evt.Request); err != nil {
					t.Fatal(err)
				}
				f.WaitAcked(t, env, 5*time.Second)
				if len(f.Unacked()) != 0 {
					t.Fatalf("unacked: %v", f.Unacked())
				}
				return
			}
		case <-deadline:
			t.Fatal("no events_api envelope")
		}
	}
}
