package fakeslack

import (
	"bytes"
	"context"
	"encoding/json"
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

	deadline := time.After(time.Minute) // a hang detector
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

// TestFramesAreTheBytesOfTheirMaps: the envelope and event_callback structs
// marshal to exactly the bytes of the maps Slack's shapes were first written
// as (json.Marshal sorts map keys), so the client reads what it always did.
func TestFramesAreTheBytesOfTheirMaps(t *testing.T) {
	event := Message{Channel: "DU1", ChannelType: "im", User: "U1", Text: "hi <@UBOT0001> & q1x2z", TS: "1700000000.000001"}.Event()
	payload, _ := json.Marshal(map[string]any{
		"token": "fake-verification-token", "team_id": "T1", "api_app_id": "A1", "event": event,
		"type": "event_callback", "event_id": "Ev00000001", "event_time": 1700000000, "event_context": "4-fake",
		"authorizations": []map[string]any{{"team_id": "T1", "user_id": "UBOT", "is_bot": true}},
	})
	for _, c := range []struct {
		name       string
		got        any
		wantSource any
	}{
		{"event_callback", eventCallback{Token: "fake-verification-token", TeamID: "T1", APIAppID: "A1", Event: event,
			Type: "event_callback", EventID: "Ev00000001", EventTime: 1700000000, EventContext: "4-fake",
			Authorizations: []authorization{{TeamID: "T1", UserID: "UBOT", IsBot: true}}}, json.RawMessage(payload)},
		{"envelope", envelopeFrame{EnvelopeID: "env-000002", Type: "events_api", Payload: payload},
			map[string]any{"envelope_id": "env-000002", "type": "events_api", "accepts_response_payload": false,
				"retry_attempt": 0, "retry_reason": "", "payload": json.RawMessage(payload)}},
		{"redelivery", envelopeFrame{EnvelopeID: "env-000003", Type: "events_api", Payload: payload, RetryAttempt: 1, RetryReason: "timeout"},
			map[string]any{"envelope_id": "env-000003", "type": "events_api", "accepts_response_payload": false,
				"retry_attempt": 1, "retry_reason": "timeout", "payload": json.RawMessage(payload)}},
	} {
		got, err1 := json.Marshal(c.got)
		want, err2 := json.Marshal(c.wantSource)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s (%v %v)", c.name, got, want, err1, err2)
		}
	}
}
