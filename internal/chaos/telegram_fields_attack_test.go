package chaos

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// TestAttackTelegramFieldsBeyondTheLibrary drives the built binary with
// messages as Telegram sends them, carrying fields the adapter does not read
// and go-telegram/bot's models refuse (a forward from an origin type they do
// not know, a reply to a message from outside the chat with such an origin),
// and an update kind the bot never asked for. Every user's message is
// answered once, and none is skipped as undecodable: before the adapter
// decoded into its own types, the first two were lost.
func TestAttackTelegramFieldsBeyondTheLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts the daemon binary")
	}
	model := loadtest.ModelOptions{Responder: func(req *fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: "answer to " + req.LastUserText()}
	}}
	r := newRig(t, model, loadtest.ConfigOptions{NoDiscord: true, NoSlack: true, LogLevel: "info"})
	r.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon output:\n%s", r.output())
		}
	})
	tg := r.p.Telegram
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		chat int64
		text string
		opts []faketelegram.SayOption
	}{
		{810001, "forwarded from somewhere new", []faketelegram.SayOption{faketelegram.WithFields(map[string]json.RawMessage{
			"forward_origin": raw(`{"type":"business_account","date":1764200000,"account":{"id":5}}`)})}},
		{810002, "forwarded from a user, with a keyboard", []faketelegram.SayOption{faketelegram.WithFields(map[string]json.RawMessage{
			"forward_origin":       raw(`{"type":"user","date":1764200000,"sender_user":{"id":7,"is_bot":false,"first_name":"Old"}}`),
			"reply_markup":         raw(`{"inline_keyboard":[[{"text":"open","url":"https://example.com"}]]}`),
			"link_preview_options": raw(`{"is_disabled":true}`)})}},
		{-1001810003, "@switchboard_bot about that other chat's message", []faketelegram.SayOption{faketelegram.InSupergroup("Team"),
			faketelegram.WithFields(map[string]json.RawMessage{
				"external_reply": raw(`{"origin":{"type":"martian","date":1},"chat":{"id":-5,"type":"channel"},"message_id":3}`),
				"quote":          raw(`{"text":"that","position":0}`)})}},
	}
	// An update kind getUpdates was not asked for, first in the queue.
	tg.SendUpdate(faketelegram.Update{Extra: map[string]json.RawMessage{
		"callback_query": raw(`{"id":"1","from":{"id":810001,"is_bot":false,"first_name":"U"},"chat_instance":"x","data":"tap"}`)}})
	for _, c := range cases {
		tg.UserSays(c.chat, c.text, c.opts...)
	}
	for _, c := range cases {
		want := "answer to " + strings.TrimPrefix(c.text, "@switchboard_bot ")
		if !until(func() bool { return len(tg.Sent(c.chat)) > 0 }) {
			t.Errorf("chat %d: no answer to %q", c.chat, c.text)
			continue
		}
		if sent := tg.Sent(c.chat); len(sent) != 1 || sent[0].Plain != want {
			t.Errorf("chat %d: sent %+v, want one message %q", c.chat, sent, want)
		}
	}
	if !until(func() bool { return tg.Pending() == 0 }) {
		t.Errorf("%d updates never confirmed", tg.Pending())
	}
	if out := r.output(); strings.Contains(out, "undecodable") {
		t.Errorf("an update was skipped as undecodable:\n%s", out)
	}
}
