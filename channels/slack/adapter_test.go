package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no bot token", Options{AppToken: "xapp"}, "SLACK_BOT_TOKEN"},
		{"socket mode without app token", Options{BotToken: "xoxb"}, "SLACK_APP_TOKEN"},
		{"http mode without signing secret", Options{BotToken: "xoxb", Mode: ModeHTTP}, "SLACK_SIGNING_SECRET"},
		{"unknown mode", Options{BotToken: "xoxb", Mode: "rtm"}, `unknown mode "rtm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	c, err := New(Options{BotToken: "xoxb-very-secret", AppToken: "xapp-very-secret", SigningSecret: "shh"})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.String(); strings.Contains(s, "secret") || strings.Contains(s, "shh") {
		t.Fatalf("String() leaks a secret: %q", s)
	}
}

func TestSocketDMRoundTripAndEdit(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	f.AddUser("U100", "Ada Lovelace")
	r := start(t, f, testOptions(f), newRecorder())

	dm, env := f.UserDMs("U100", "hello bot")
	got := r.sink.waitN(t, 1)[0]
	want := channels.Message{
		Channel: "slack", ChatID: fakeslack.DMChannel("U100"), MessageID: fakeslack.DMChannel("U100") + ":" + dm.TS,
		Sender: channels.Sender{ID: "U100", Name: "Ada Lovelace"}, Text: "hello bot", Direct: true,
		Time: tsTime(dm.TS),
	}
	if got.Channel != want.Channel || got.ChatID != want.ChatID || got.MessageID != want.MessageID ||
		got.Sender != want.Sender || got.Text != want.Text || !got.Direct || got.Mentioned || got.ThreadID != "" ||
		!got.Time.Equal(want.Time) {
		t.Fatalf("message:\n got %+v\nwant %+v", got, want)
	}
	f.WaitAcked(t, env, wait)
	if got.Target().String() != "slack:DU100" {
		t.Fatalf("session key = %q, want slack:DU100 (DMs stay flat)", got.Target())
	}

	ts, err := r.c.Send(context.Background(), channels.Outgoing{Target: got.Target(), Text: "*Hi* Ada", ReplyTo: got.MessageID})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	posts := f.WaitPosted(t, 1, wait)
	if p := posts[0]; p.Channel != "DU100" || p.Text != "*Hi* Ada" || p.ThreadTS != "" || p.TS != ts {
		t.Fatalf("posted %+v, want text %q in DU100 (no thread) with ts %s", p, "*Hi* Ada", ts)
	}

	if err := r.c.Edit(context.Background(), got.Target(), ts, "*Hi* Ada, how can I help?"); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	up := f.WaitUpdated(t, 1, wait)[0]
	if up.Channel != "DU100" || up.TS != ts || up.Text != "*Hi* Ada, how can I help?" {
		t.Fatalf("update %+v", up)
	}
}

func TestRunReportsRejectedCredentials(t *testing.T) {
	tests := []struct {
		name    string
		script  func(f *fakeslack.Server)
		opts    func(o *Options)
		wantErr []string
	}{
		{"invalid bot token", func(f *fakeslack.Server) { f.SetAuthError("invalid_auth", "") }, nil,
			[]string{"slack: the bot token was rejected (invalid_auth): check SLACK_BOT_TOKEN"}},
		{"missing scope", func(f *fakeslack.Server) { f.SetAuthError("missing_scope", "users:read") }, nil,
			[]string{`lacks the OAuth scope "users:read"`}},
		{"wrong app token", nil, func(o *Options) { o.AppToken = "xapp-wrong" },
			[]string{"slack: the app-level token was rejected (invalid_auth): check SLACK_APP_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeslack.New(t, fakeslack.Options{})
			if tt.script != nil {
				tt.script(f)
			}
			opts := testOptions(f)
			if tt.opts != nil {
				tt.opts(&opts)
			}
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err = c.Run(ctx, newRecorder())
			if err == nil {
				t.Fatal("Run returned nil, want the credential error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
			for _, secret := range []string{f.BotToken(), f.AppToken(), "xapp-wrong"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error leaks a token: %q", err)
				}
			}
		})
	}
}
