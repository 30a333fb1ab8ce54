package telegram

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-telegram/bot/models"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// TestUpdatesAsTelegramSendsThem feeds whole Bot API updates, as getUpdates
// returns them (with fields the adapter does not read), through the poller's
// decoding and the webhook's, and normalization, and checks what reaches the
// handler and that every one of them is confirmed.
func TestUpdatesAsTelegramSendsThem(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want *channels.Message // nil: ignored (confirmed, not delivered)
	}{
		{
			name: "private message with fields the adapter does not read",
			raw: `{"update_id":10,"message":{"message_id":7,"from":{"id":42,"is_bot":false,"first_name":"Ana","last_name":"Lima","username":"ana","language_code":"pt-BR","is_premium":true},
				"chat":{"id":42,"first_name":"Ana","username":"ana","type":"private"},"date":1764201600,"text":"hello there",
				"link_preview_options":{"is_disabled":true},"via_bot":{"id":5,"is_bot":true,"first_name":"V"},"has_protected_content":true,
				"reply_markup":{"inline_keyboard":[[{"text":"ok","callback_data":"x"}]]},"effect_id":"5104841245755180586"}}`,
			want: &channels.Message{ChatID: "42", MessageID: "42:7", Text: "hello there", Direct: true,
				Sender: channels.Sender{ID: "42", Name: "Ana Lima"}},
		},
		{
			// go-telegram/bot's models refuse an origin type they do not
			// know ("unsupported MessageOrigin type"), which skipped the
			// whole update: the user's message was lost.
			name: "forward from an origin type the library does not know",
			raw: `{"update_id":11,"message":{"message_id":8,"from":{"id":42,"is_bot":false,"first_name":"Ana"},"chat":{"id":42,"type":"private"},"date":1764201600,
				"forward_origin":{"type":"business_account","date":1764200000},"text":"look at this"}}`,
			want: &channels.Message{ChatID: "42", MessageID: "42:8", Text: "look at this", Direct: true,
				Sender: channels.Sender{ID: "42", Name: "Ana"}},
		},
		{
			name: "group reply to the bot, quoted, in a forum topic",
			raw: `{"update_id":12,"message":{"message_id":30,"message_thread_id":29,"is_topic_message":true,"from":{"id":43,"is_bot":false,"first_name":"Bo"},
				"chat":{"id":-1001,"title":"Team","type":"supergroup","is_forum":true},"date":1764201600,"text":"and tomorrow?",
				"reply_to_message":{"message_id":29,"from":{"id":` + itoa(botID) + `,"is_bot":true,"first_name":"Switchboard","username":"` + botName + `"},
					"chat":{"id":-1001,"type":"supergroup"},"date":1764201500,"text":"Sunny today."}}}`,
			want: &channels.Message{ChatID: "-1001", ThreadID: "29", MessageID: "-1001:30", Text: "and tomorrow?", Mentioned: true,
				ReplyTo: "-1001:29", Quote: &channels.Quote{Author: "Switchboard", Text: "Sunny today.", FromBot: true},
				Sender: channels.Sender{ID: "43", Name: "Bo"}},
		},
		{
			name: "a topic's messages reply to its creation message: not a reply",
			raw: `{"update_id":13,"message":{"message_id":31,"message_thread_id":29,"is_topic_message":true,"from":{"id":43,"is_bot":false,"first_name":"Bo"},
				"chat":{"id":-1001,"type":"supergroup","is_forum":true},"date":1764201600,"text":"@` + botName + ` hi","entities":[{"type":"mention","offset":0,"length":16}],
				"reply_to_message":{"message_id":29,"from":{"id":43,"is_bot":false,"first_name":"Bo"},"chat":{"id":-1001,"type":"supergroup"},"date":1764201500,
					"forum_topic_created":{"name":"Plans","icon_color":7322096}}}}`,
			want: &channels.Message{ChatID: "-1001", ThreadID: "29", MessageID: "-1001:31", Text: "hi", Mentioned: true,
				Sender: channels.Sender{ID: "43", Name: "Bo"}},
		},
		{
			name: "posted by the group itself, with a caption command for the bot",
			raw: `{"update_id":14,"message":{"message_id":9,"sender_chat":{"id":-1002,"title":"Ops","type":"supergroup"},"chat":{"id":-1002,"title":"Ops","type":"supergroup"},
				"date":1764201600,"caption":"/report@` + botName + ` weekly","caption_entities":[{"type":"bot_command","offset":0,"length":23}]}}`,
			want: &channels.Message{ChatID: "-1002", MessageID: "-1002:9", Text: "/report weekly", Mentioned: true,
				Sender: channels.Sender{ID: "-1002", Name: "Ops"}},
		},
		{
			name: "automatic forward from the linked channel",
			raw: `{"update_id":15,"message":{"message_id":10,"sender_chat":{"id":-1003,"title":"News","type":"channel"},"chat":{"id":-1002,"type":"supergroup"},
				"date":1764201600,"is_automatic_forward":true,"text":"New post"}}`,
		},
		{
			name: "edited message",
			raw:  `{"update_id":16,"edited_message":{"message_id":7,"from":{"id":42,"is_bot":false,"first_name":"Ana"},"chat":{"id":42,"type":"private"},"date":1,"edit_date":2,"text":"hello!"}}`,
		},
		{
			name: "an update kind the bot does not ask for",
			raw:  `{"update_id":17,"message_reaction":{"chat":{"id":42,"type":"private"},"message_id":7,"date":1,"old_reaction":[],"new_reaction":[{"type":"emoji","emoji":"👍"}]}}`,
		},
	}
	deliver := map[string]func(t *testing.T, raw string, sink channels.Sink) (confirmed bool){
		"getUpdates": func(t *testing.T, raw string, sink channels.Sink) bool {
			ch := newBareAdapter(t, ModePolling)
			var head struct {
				ID int64 `json:"update_id"`
			}
			if err := json.Unmarshal([]byte(raw), &head); err != nil {
				t.Fatalf("test update is not JSON: %v", err)
			}
			var offset int64
			if _, err := ch.handleBatch(context.Background(), sink, []json.RawMessage{json.RawMessage(raw)}, &offset); err != nil {
				t.Fatalf("handleBatch: %v", err)
			}
			return offset == head.ID+1
		},
		"webhook": func(t *testing.T, raw string, sink channels.Sink) bool {
			ch := newBareAdapter(t, ModeWebhook)
			ch.sink.Store(&sinkBox{sink})
			req := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(raw))
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", ch.opts.WebhookSecret)
			w := httptest.NewRecorder()
			ch.WebhookHandler().ServeHTTP(w, req)
			return w.Code == http.StatusOK
		},
	}
	for _, tc := range cases {
		for path, send := range deliver {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				rec := newRecorder()
				if !send(t, tc.raw, rec.sink()) {
					t.Errorf("the update was not confirmed: Telegram would send it again")
				}
				got := rec.all()
				if tc.want == nil {
					if len(got) != 0 {
						t.Fatalf("delivered %+v, want it ignored", got[0])
					}
					return
				}
				if len(got) != 1 {
					t.Fatalf("delivered %d messages, want 1", len(got))
				}
				m, w := got[0], *tc.want
				if m.Time.Unix() != 1764201600 {
					t.Errorf("time %v, want the message's date", m.Time)
				}
				if m.Quote == nil != (w.Quote == nil) || m.Quote != nil && *m.Quote != *w.Quote {
					t.Errorf("quote %+v, want %+v", m.Quote, w.Quote)
				}
				if m.Channel != "telegram" || m.Text != w.Text || m.ChatID != w.ChatID || m.ThreadID != w.ThreadID || m.MessageID != w.MessageID ||
					m.Direct != w.Direct || m.Mentioned != w.Mentioned || m.ReplyTo != w.ReplyTo || m.Sender != w.Sender || m.FromSelf {
					t.Errorf("delivered\n %+v\nwant\n %+v", m, w)
				}
			})
		}
	}
}

// newBareAdapter is an adapter that knows who it is without having run.
func newBareAdapter(t *testing.T, mode string) *Adapter {
	t.Helper()
	opts := Options{Token: faketelegram.DefaultToken, MaxMediaBytes: -1, Mode: mode}
	if mode == ModeWebhook {
		opts.WebhookURL, opts.WebhookSecret = "https://bot.example/webhooks/telegram", "s3cret-Value_1"
	}
	ch, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ch.me.Store(&models.User{ID: botID, IsBot: true, Username: botName})
	return ch
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
