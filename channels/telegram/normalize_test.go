package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

const botID, botName = 123456789, "switchboard_bot"

// ents converts the fake's Telegram-style entity detection into the library's type.
func ents(text string) []models.MessageEntity {
	var out []models.MessageEntity
	for _, e := range faketelegram.DetectEntities(text) {
		out = append(out, models.MessageEntity{Type: models.MessageEntityType(e.Type), Offset: e.Offset, Length: e.Length})
	}
	return out
}

func TestAnalyzeText(t *testing.T) {
	cases := []struct {
		text      string
		entities  []models.MessageEntity // nil: detected like Telegram does
		want      string
		mentioned bool
		otherBot  bool
	}{
		{text: "hello", want: "hello"},
		{text: "@switchboard_bot hello", want: "hello", mentioned: true},
		{text: "hi @switchboard_bot there", want: "hi there", mentioned: true},
		{text: "hi @switchboard_bot", want: "hi", mentioned: true},
		{text: "@switchboard_bot: do it", want: "do it", mentioned: true},
		{text: "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 @switchboard_bot ok", want: "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ok", mentioned: true},
		{text: "🇩🇪🇫🇷 @switchboard_bot! yes", want: "🇩🇪🇫🇷! yes", mentioned: true},
		{text: "@switchboard_bot @switchboard_bot twice", want: "twice", mentioned: true},
		{text: "@switchboard_bot", want: "", mentioned: true},
		{text: "mail me at x@switchboard_bot.com", want: "mail me at x@switchboard_bot.com"},
		{text: "@switchboard_botx is someone else", want: "@switchboard_botx is someone else"},
		{text: "/start@switchboard_bot", want: "/start", mentioned: true},
		{text: "/start@SwitchBoard_Bot now", want: "/start now", mentioned: true},
		{text: "/start@other_bot", want: "/start@other_bot", otherBot: true},
		{text: "see /start@other_bot", want: "see /start@other_bot"},
		{text: "/start", want: "/start"},
		{text: "bad offsets", entities: []models.MessageEntity{
			{Type: "mention", Offset: 5, Length: 100}, {Type: "mention", Offset: -1, Length: 2},
			{Type: "bot_command", Offset: 3, Length: 0}}, want: "bad offsets"},
		{text: "Bot, do", entities: []models.MessageEntity{
			{Type: "text_mention", Offset: 0, Length: 3, User: &models.User{ID: botID}}}, want: "do", mentioned: true},
		{text: "Ann, do", entities: []models.MessageEntity{
			{Type: "text_mention", Offset: 0, Length: 3, User: &models.User{ID: 5}}}, want: "Ann, do"},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			e := tc.entities
			if e == nil {
				e = ents(tc.text)
			}
			got := analyzeText(tc.text, e, botID, botName)
			if got.text != tc.want || got.mentioned != tc.mentioned || got.otherBot != tc.otherBot {
				t.Errorf("analyzeText(%q) = %q mentioned=%v other=%v; want %q %v %v",
					tc.text, got.text, got.mentioned, got.otherBot, tc.want, tc.mentioned, tc.otherBot)
			}
		})
	}
}

func FuzzAnalyzeText(f *testing.F) {
	f.Add("hi @switchboard_bot there", 3, 16, "mention")
	f.Add("🇩🇪 /x@switchboard_bot", 5, 19, "bot_command")
	f.Add("\xff\xfe broken", 0, 3, "mention")
	f.Fuzz(func(t *testing.T, text string, off, length int, typ string) {
		e := append(ents(text), models.MessageEntity{Type: models.MessageEntityType(typ), Offset: off, Length: length})
		got := analyzeText(text, e, botID, botName)
		if utf8.ValidString(text) && !utf8.ValidString(got.text) {
			t.Fatalf("invalid UTF-8 out of valid input: %q → %q", text, got.text)
		}
		if len(utf16.Encode([]rune(got.text))) > len(utf16.Encode([]rune(text))) {
			t.Fatalf("stripping grew the text: %q → %q", text, got.text)
		}
	})
}

// FuzzNormalizeUpdate feeds arbitrary update JSON through decoding and
// normalization: it must never panic, and a produced message must be
// well-formed.
func FuzzNormalizeUpdate(f *testing.F) {
	f.Add([]byte(`{"update_id":1,"message":{"message_id":5,"date":1,"chat":{"id":-100,"type":"supergroup"},"from":{"id":9,"is_bot":false,"first_name":"A"},"text":"@switchboard_bot hi","entities":[{"type":"mention","offset":0,"length":16}]}}`))
	f.Add([]byte(`{"update_id":2,"message":{"message_id":6,"date":1,"chat":{"id":42,"type":"private"},"caption":"x","caption_entities":[{"type":"bot_command","offset":0,"length":99}],"reply_to_message":{"message_id":1,"date":1,"chat":{"id":42,"type":"private"}}}}`))
	f.Add([]byte(`{"update_id":3,"edited_message":{"message_id":6,"date":1,"chat":{"id":42,"type":"private"},"text":"x"}}`))
	f.Add([]byte(`{"update_id":4,"message":{"message_id":7,"message_thread_id":3,"is_topic_message":true,"date":1,"chat":{"id":-5,"type":"supergroup","is_forum":true},"sender_chat":{"id":-5,"type":"supergroup","title":"T"},"text":"/a@b"}}`))
	ch, err := New(Options{Token: faketelegram.DefaultToken, MaxMediaBytes: -1})
	if err != nil {
		f.Fatal(err)
	}
	ch.me.Store(&models.User{ID: botID, IsBot: true, Username: botName})
	f.Fuzz(func(t *testing.T, data []byte) {
		var upd models.Update
		if json.Unmarshal(data, &upd) != nil {
			return
		}
		msg, ok := ch.normalize(context.Background(), &upd)
		if !ok {
			return
		}
		if msg.Channel != "telegram" || msg.ChatID == "" || !strings.HasPrefix(msg.MessageID, msg.ChatID+":") {
			t.Fatalf("malformed message %+v", msg)
		}
		if strings.TrimSpace(msg.Text) == "" && len(msg.Media) == 0 {
			t.Fatalf("empty message delivered: %+v", msg)
		}
		if _, ok := channels.ParseTarget(msg.Target().String()); !ok {
			t.Fatalf("target %q does not parse", msg.Target())
		}
	})
}

func TestLongAnswerArrivesInOrderedChunks(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	target := channels.Target{Channel: "telegram", ChatID: "42"}

	// ~10,000 characters: prose, a bullet list, and code blocks with
	// characters that must be escaped in HTML.
	var md strings.Builder
	for i := 0; md.Len() < 10000; i++ {
		fmt.Fprintf(&md, "## Part %d\n\nThis paragraph %d explains **step %d** with `inline <code>` & more text to read.\n\n", i, i, i)
		fmt.Fprintf(&md, "- item %d-a\n- item %d-b\n\n", i, i)
		fmt.Fprintf(&md, "```go\nfunc step%d() int {\n\tif a < b && c > d {\n\t\treturn %d\n\t}\n\treturn 0\n}\n```\n\n", i, i)
	}
	chunks := r.ch.Format(md.String())
	if len(chunks) < 3 {
		t.Fatalf("a %d-character answer became %d chunk(s)", md.Len(), len(chunks))
	}
	for i, c := range chunks {
		if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: target, Text: c.Text, Plain: c.Plain}); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
	t.Logf("%d characters of Markdown → %d chunks", md.Len(), len(chunks))
	sent := r.fake.WaitSent(t, 42, len(chunks), waitLong)
	if n := len(r.fake.Requests("sendMessage")); n != len(chunks) {
		t.Errorf("%d sendMessage calls for %d chunks: some HTML was rejected and resent plain", n, len(chunks))
	}
	var all strings.Builder
	for i, m := range sent {
		if m.ParseMode != "HTML" {
			t.Errorf("chunk %d went out as %q", i, m.ParseMode)
		}
		if n := len(utf16.Encode([]rune(m.Plain))); n >= 4096 {
			t.Errorf("chunk %d is %d characters", i, n)
		}
		if strings.Count(m.Text, "<pre>") != strings.Count(m.Text, "</pre>") {
			t.Errorf("chunk %d has unbalanced <pre>", i)
		}
		all.WriteString(m.Plain)
		all.WriteString("\n")
	}
	// Every code block arrives whole and in order.
	text := all.String()
	last := -1
	for i := 0; strings.Contains(md.String(), fmt.Sprintf("func step%d()", i)); i++ {
		block := fmt.Sprintf("func step%d() int {\n\tif a < b && c > d {\n\t\treturn %d\n\t}\n\treturn 0\n}", i, i)
		at := strings.Index(text, block)
		if at < 0 {
			t.Fatalf("code block %d missing or broken in the delivered text", i)
		}
		if at < last {
			t.Fatalf("code block %d arrived out of order", i)
		}
		last = at
	}
}
