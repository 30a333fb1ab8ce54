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
		var upd update
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

func TestGroupMentionsAndReplies(t *testing.T) {
	r := newRig(t, nil)
	const group = -100200
	bot := r.fake.Bot()
	r.fake.AddChat(faketelegram.Chat{ID: group, Type: "supergroup", Title: "Team"})
	botMsgID, err := r.ch.Send(context.Background(), channels.Outgoing{
		Target: channels.Target{Channel: "telegram", ChatID: fmt.Sprint(group)}, Text: "I am here",
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	botMsg := r.fake.Sent(group)[0].MessageID
	if botMsgID != fmt.Sprintf("%d:%d", group, botMsg) {
		t.Fatalf("Send id %q", botMsgID)
	}
	userMsg := r.fake.UserSays(group, "first post")

	cases := []struct {
		name          string
		text          string
		opts          []faketelegram.SayOption
		wantText      string
		wantMentioned bool
		wantReplyTo   string
	}{
		{name: "plain", text: "just chatting", wantText: "just chatting"},
		{name: "leading mention", text: "@switchboard_bot what's up?", wantText: "what's up?", wantMentioned: true},
		{name: "mention with comma", text: "@switchboard_bot, summarize", wantText: "summarize", wantMentioned: true},
		{name: "mention after emoji (UTF-16)", text: "👋🏽 hey @switchboard_bot, how are you", wantText: "👋🏽 hey, how are you", wantMentioned: true},
		{name: "mention at end", text: "thoughts? @switchboard_bot", wantText: "thoughts?", wantMentioned: true},
		{name: "mention any case", text: "@Switchboard_Bot hi", wantText: "hi", wantMentioned: true},
		{name: "other user mentioned", text: "@alice_smith look", wantText: "@alice_smith look"},
		{name: "text mention of the bot", text: "Switchboard please help",
			opts: []faketelegram.SayOption{faketelegram.Entities(faketelegram.MessageEntity{
				Type: "text_mention", Offset: 0, Length: 11, User: &bot})},
			wantText: "please help", wantMentioned: true},
		{name: "reply to the bot", text: "and then?", opts: []faketelegram.SayOption{faketelegram.ReplyTo(botMsg)},
			wantText: "and then?", wantMentioned: true, wantReplyTo: fmt.Sprintf("%d:%d", group, botMsg)},
		{name: "reply to a user", text: "agreed", opts: []faketelegram.SayOption{faketelegram.ReplyTo(userMsg.MessageID)},
			wantText: "agreed", wantReplyTo: fmt.Sprintf("%d:%d", group, userMsg.MessageID)},
	}
	for _, tc := range cases {
		r.fake.UserSays(group, tc.text, tc.opts...)
	}
	got := r.rec.wait(t, len(cases)+1)[1:]
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := got[i]
			if m.Text != tc.wantText || m.Mentioned != tc.wantMentioned || m.ReplyTo != tc.wantReplyTo {
				t.Errorf("got text %q mentioned %v reply %q; want %q %v %q", m.Text, m.Mentioned, m.ReplyTo,
					tc.wantText, tc.wantMentioned, tc.wantReplyTo)
			}
			if m.Direct || m.ChatID != fmt.Sprint(group) || m.Sender.ID != "1000001" || m.Sender.Name != "Alice Liddell" {
				t.Errorf("group message fields: %+v", m)
			}
		})
	}

	// Answering in the group quotes the question (reply_parameters).
	q := got[1]
	if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: q.Target(), Text: "fine", ReplyTo: q.MessageID}); err != nil {
		t.Fatalf("Send reply: %v", err)
	}
	sent := r.fake.WaitSent(t, group, 2, waitLong)
	if want := strings.TrimPrefix(q.MessageID, fmt.Sprint(group)+":"); fmt.Sprint(sent[1].ReplyToMessageID) != want {
		t.Errorf("reply went to %d, want %s", sent[1].ReplyToMessageID, want)
	}
	req := r.fake.Requests("sendMessage")
	if rp := req[len(req)-1].Fields["reply_parameters"]; !strings.Contains(rp, `"allow_sending_without_reply":true`) {
		t.Errorf("reply_parameters = %s", rp)
	}
}

func TestSenderFlags(t *testing.T) {
	r := newRig(t, nil)
	const group = -300
	other := faketelegram.User{ID: 777, IsBot: true, FirstName: "Other", Username: "other_bot"}
	r.fake.UserSays(group, "beep", faketelegram.From(other))
	r.fake.UserSays(group, "echo", faketelegram.From(r.fake.Bot()))
	r.fake.UserSays(group, "admin speaking", faketelegram.AsChat(faketelegram.Chat{ID: group, Type: "supergroup", Title: "Team"}))
	got := r.rec.wait(t, 3)
	if s := got[0].Sender; !s.IsBot || s.ID != "777" || got[0].FromSelf {
		t.Errorf("other bot: %+v self=%v", s, got[0].FromSelf)
	}
	if !got[1].FromSelf || !got[1].Sender.IsBot {
		t.Errorf("own message: %+v", got[1])
	}
	if s := got[2].Sender; s.ID != fmt.Sprint(group) || s.Name != "Team" || s.IsBot {
		t.Errorf("anonymous admin sender: %+v", s)
	}
}

func TestForumTopic(t *testing.T) {
	r := newRig(t, nil)
	const forum = -100777
	topic := r.fake.CreateTopic(forum, "Ideas")
	r.fake.UserSays(forum, "@switchboard_bot new idea", faketelegram.InTopic(topic))
	r.fake.UserSays(forum, "in general")
	got := r.rec.wait(t, 2)
	if got[0].ThreadID != fmt.Sprint(topic) || got[0].ReplyTo != "" || !got[0].Mentioned || got[0].Text != "new idea" {
		t.Errorf("topic message: %+v", got[0])
	}
	if got[0].Target().String() != fmt.Sprintf("telegram:%d:%d", forum, topic) {
		t.Errorf("topic target = %s", got[0].Target())
	}
	if got[1].ThreadID != "" {
		t.Errorf("message outside topics got thread %q", got[1].ThreadID)
	}

	if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: got[0].Target(), Text: "noted"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := r.fake.WaitSent(t, forum, 1, waitLong)
	if sent[0].ThreadID != topic {
		t.Errorf("answer landed in thread %d, want %d", sent[0].ThreadID, topic)
	}
	// A reply to the bot inside the topic is a real reply and a mention.
	r.fake.UserSays(forum, "more please", faketelegram.InTopic(topic), faketelegram.ReplyTo(sent[0].MessageID))
	m := r.rec.wait(t, 3)[2]
	if !m.Mentioned || m.ReplyTo != fmt.Sprintf("%d:%d", forum, sent[0].MessageID) || m.ThreadID != fmt.Sprint(topic) {
		t.Errorf("reply in topic: %+v", m)
	}
}

func TestCommandsAddressedToBots(t *testing.T) {
	r := newRig(t, nil)
	const group = -500
	r.fake.UserSays(group, "/help@switchboard_bot")
	r.fake.UserSays(group, "/help@other_bot")
	r.fake.UserSays(group, "/persona@switchboard_bot pirate")
	r.fake.UserSays(group, "/reset")
	r.fake.UserSays(group, "done")
	got := r.rec.wait(t, 4)
	want := []struct {
		text      string
		mentioned bool
	}{{"/help", true}, {"/persona pirate", true}, {"/reset", false}, {"done", false}}
	for i, w := range want {
		if got[i].Text != w.text || got[i].Mentioned != w.mentioned {
			t.Errorf("message %d: %q mentioned=%v, want %q %v", i, got[i].Text, got[i].Mentioned, w.text, w.mentioned)
		}
	}
	r.fake.WaitConfirmed(t, 1005, waitLong)
	if n := len(r.rec.all()); n != 4 {
		t.Errorf("sink got %d messages; the command for another bot must be ignored", n)
	}
}

func TestEditedMessageIgnored(t *testing.T) {
	r := newRig(t, nil)
	m := r.fake.UserSays(42, "helo")
	r.rec.wait(t, 1)
	if _, err := r.fake.UserEdits(42, m.MessageID, "hello"); err != nil {
		t.Fatal(err)
	}
	r.fake.UserSays(42, "next")
	got := r.rec.wait(t, 2)
	r.fake.WaitConfirmed(t, 1003, waitLong)
	if len(r.rec.all()) != 2 || got[1].Text != "next" {
		t.Errorf("sink got %+v; the edit must be ignored", r.rec.all())
	}
	if !strings.Contains(r.logs.String(), "edited message ignored") {
		t.Errorf("no debug log for the ignored edit")
	}
}

func TestPhotoMedia(t *testing.T) {
	jpeg := make([]byte, 5000)
	for i := range jpeg {
		jpeg[i] = byte(i * 7)
	}
	jpeg[0], jpeg[1] = 0xFF, 0xD8
	cases := []struct {
		name     string
		limit    int64
		wantData []byte
	}{
		{name: "full size", limit: 1 << 20, wantData: jpeg},
		{name: "largest size under the cap", limit: 1000, wantData: jpeg[:16]},
		{name: "media disabled", limit: -1, wantData: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(o *Options) { o.MaxMediaBytes = tc.limit })
			r.fake.UserSendsPhoto(42, jpeg, "what is this?")
			m := r.rec.wait(t, 1)[0]
			if m.Text != "what is this?" {
				t.Errorf("caption → Text = %q", m.Text)
			}
			if tc.wantData == nil {
				if len(m.Media) != 0 {
					t.Errorf("media = %d items, want none", len(m.Media))
				}
				return
			}
			if len(m.Media) != 1 || m.Media[0].MIME != "image/jpeg" || string(m.Media[0].Data) != string(tc.wantData) {
				t.Fatalf("media = %+v", m.Media)
			}
			if !strings.HasSuffix(m.Media[0].Name, ".jpg") {
				t.Errorf("media name %q", m.Media[0].Name)
			}
		})
	}
}

func TestPhotoDownloadFailureKeepsCaption(t *testing.T) {
	r := newRig(t, nil)
	r.fake.FailNext("getFile", 1, faketelegram.InternalError())
	r.fake.UserSendsPhoto(42, []byte("\xff\xd8tiny"), "caption survives")
	m := r.rec.wait(t, 1)[0]
	if m.Text != "caption survives\n[the photo could not be downloaded from Telegram]" || len(m.Media) != 0 {
		t.Errorf("got %+v", m)
	}
	if !strings.Contains(r.logs.String(), "photo dropped") {
		t.Error("no warning about the dropped photo")
	}
}
