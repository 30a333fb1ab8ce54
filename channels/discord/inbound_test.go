package discord

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

func TestOwnAndOtherBotsMessages(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "bots dropped", true: "bots allowed"}[allow], func(t *testing.T) {
			t.Parallel()
			h := start(t, fakediscord.Options{}, func(o *Options) { o.AllowBots = allow })
			h.fake.UserSays(chanID, userID, "first", fakediscord.SayOptions{GuildID: guildID})
			h.sink.wait(t, 1)
			// The bot's own message comes back as MESSAGE_CREATE from the fake.
			if _, err := h.ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "discord", ChatID: chanID}, Text: "own"}); err != nil {
				t.Fatal(err)
			}
			other := h.fake.UserSays(chanID, "999", "beep", fakediscord.SayOptions{GuildID: guildID, Bot: true})
			last := h.fake.UserSays(chanID, userID, "second", fakediscord.SayOptions{GuildID: guildID})
			want := []string{"first", "second"}
			if allow {
				want = []string{"first", "beep", "second"}
			}
			got := h.sink.wait(t, len(want))
			// The last message arriving proves everything before it was processed.
			if got[len(got)-1].MessageID != last.ID {
				t.Fatalf("last message = %s, want %s\n%s", got[len(got)-1].MessageID, last.ID, fmtMsgs(got))
			}
			var texts []string
			for _, m := range got {
				texts = append(texts, m.Text)
				if m.FromSelf || m.Text == "own" {
					t.Errorf("the bot's own message reached the sink: %+v", m)
				}
				if m.MessageID == other.ID && !m.Sender.IsBot {
					t.Errorf("other bot not flagged IsBot: %+v", m)
				}
			}
			if !slices.Equal(texts, want) {
				t.Fatalf("texts = %q, want %q", texts, want)
			}
		})
	}
}

func TestGuildMentionsAndReplies(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	bot := h.fake.BotID()
	botMsg, err := h.ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "discord", ChatID: chanID}, Text: "I am the bot"})
	if err == nil {
		t.Fatalf("send into an unknown channel succeeded (%s); the fake should 404", botMsg)
	}
	h.fake.AddChannel(guildID, chanID, "general")
	botMsg, err = h.ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "discord", ChatID: chanID}, Text: "I am the bot"})
	if err != nil {
		t.Fatal(err)
	}
	userMsg := h.fake.UserSays(chanID, "401", "plain user message", fakediscord.SayOptions{GuildID: guildID})

	cases := []struct {
		name      string
		text      string
		reply     string
		mentioned bool
		wantText  string
	}{
		{"no mention", "hello everyone", "", false, "hello everyone"},
		{"<@id> mention", "<@" + bot + "> what's up", "", true, "what's up"},
		{"<@!id> nickname mention", "<@!" + bot + ">   ping", "", true, "ping"},
		{"mention in the middle", "hey <@401> and <@" + bot + "> look", "", true, "hey <@401> and look"},
		{"other user only", "hey <@401>", "", false, "hey <@401>"},
		{"reply to the bot", "thanks", botMsg, true, "thanks"},
		{"reply to a user", "agreed", userMsg.ID, false, "agreed"},
	}
	var sent []fakediscord.Message
	for _, tc := range cases {
		sent = append(sent, h.fake.UserSays(chanID, userID, tc.text, fakediscord.SayOptions{GuildID: guildID, ReplyTo: tc.reply, Nick: "Ally"}))
	}
	got := h.sink.wait(t, len(cases)+1)[1:] // first is userMsg
	for i, tc := range cases {
		m := got[i]
		if m.MessageID != sent[i].ID {
			t.Fatalf("%s: out of order: got %s want %s", tc.name, m.MessageID, sent[i].ID)
		}
		if m.Mentioned != tc.mentioned || m.Text != tc.wantText || m.Direct || m.ChatID != chanID || m.Sender.Name != "Ally" {
			t.Errorf("%s: got Mentioned=%v Text=%q Direct=%v Chat=%s Name=%q; want Mentioned=%v Text=%q",
				tc.name, m.Mentioned, m.Text, m.Direct, m.ChatID, m.Sender.Name, tc.mentioned, tc.wantText)
		}
		if m.ReplyTo != tc.reply {
			t.Errorf("%s: ReplyTo = %q, want %q", tc.name, m.ReplyTo, tc.reply)
		}
	}
}

func TestThreads(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	// Created after READY, so not in GUILD_CREATE: the adapter must look it up.
	h.fake.AddThread(guildID, chanID, "600", "help thread")
	in := h.fake.UserSays("600", userID, "question in a thread", fakediscord.SayOptions{GuildID: guildID})
	got := h.sink.wait(t, 1)[0]
	if got.ChatID != chanID || got.ThreadID != "600" || got.ParentID != chanID || got.MessageID != in.ID {
		t.Fatalf("thread message = %+v; want ChatID %s ThreadID 600 ParentID %s", got, chanID, chanID)
	}
	if got.Target().String() != "discord:"+chanID+":600" {
		t.Errorf("session key = %s", got.Target())
	}
	// The thread was not in GUILD_CREATE, so the adapter asked the API.
	if !slices.ContainsFunc(h.fake.Requests(), func(r fakediscord.Request) bool { return r.Method == "GET" && r.Path == "/api/v9/channels/600" }) {
		t.Errorf("no GET /channels/600 lookup recorded")
	}

	if _, err := h.ch.Send(context.Background(), channels.Outgoing{Target: got.Target(), Text: "answer in thread", ReplyTo: got.MessageID}); err != nil {
		t.Fatal(err)
	}
	inThread := h.fake.WaitSent(t, "600", 1, wait)
	if inThread[0].Content != "answer in thread" || len(h.fake.Sent(chanID)) != 0 {
		t.Fatalf("answer went to the wrong channel: thread=%+v parent=%+v", inThread, h.fake.Sent(chanID))
	}
	ref := h.fake.MessageRequests()[0].MessageReference
	if ref == nil || ref.MessageID != in.ID || ref.FailIfNotExists == nil || *ref.FailIfNotExists {
		t.Errorf("guild reply message_reference = %+v; want message_id %s, fail_if_not_exists false", ref, in.ID)
	}
}

func TestThreadFromGuildCreate(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken, HeartbeatInterval: 500 * time.Millisecond})
	fake.AddThread(guildID, chanID, "700", "known thread")
	ch, _ := newChannel(t, fake, nil)
	sink := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink) }()
	defer func() { cancel(); <-done }()
	fake.WaitFor(t, wait, "ready", ch.Ready)
	fake.UserSays("700", userID, "hi", fakediscord.SayOptions{GuildID: guildID})
	got := sink.wait(t, 1)[0]
	if got.ChatID != chanID || got.ThreadID != "700" {
		t.Fatalf("got %+v", got)
	}
	if slices.ContainsFunc(fake.Requests(), func(r fakediscord.Request) bool { return r.Path == "/api/v9/channels/700" }) {
		t.Errorf("thread announced in GUILD_CREATE was looked up over REST anyway")
	}
}

func TestAttachments(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, func(o *Options) { o.MaxMediaBytes = 1024 })
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 100)...)
	in := h.fake.UserSays(dmID, userID, "look", fakediscord.SayOptions{Attachments: []fakediscord.FileSpec{
		{Filename: "cat.png", ContentType: "image/png", Data: png},
		{Filename: "huge.jpg", ContentType: "image/jpeg", Data: make([]byte, 2048)},
		{Filename: "lies.jpg", ContentType: "image/jpeg", Data: make([]byte, 2048), Size: 10}, // advertised small, is big
		{Filename: "notes.txt", ContentType: "text/plain", Data: []byte("text")},
	}})
	got := h.sink.wait(t, 1)[0]
	if got.MessageID != in.ID || len(got.Media) != 2 {
		t.Fatalf("media = %d items (%+v); want cat.png and notes.txt", len(got.Media), got.Media)
	}
	if m := got.Media[0]; m.Name != "cat.png" || m.MIME != "image/png" || string(m.Data) != string(png) {
		t.Errorf("media = %s %s %d bytes", m.Name, m.MIME, len(m.Data))
	}
	if m := got.Media[1]; m.Name != "notes.txt" || m.MIME != "text/plain" || string(m.Data) != "text" {
		t.Errorf("media = %s %s %d bytes; a document arrives too (issue 32)", m.Name, m.MIME, len(m.Data))
	}
	var downloads int
	for _, r := range h.fake.Requests() {
		if strings.HasPrefix(r.Path, "/attachments/") {
			downloads++
		}
	}
	if downloads != 3 { // cat.png, notes.txt and the lying one (cut off at the cap)
		t.Errorf("%d attachment downloads, want 3 (the CDN host must be rewritten to the fake)", downloads)
	}
}

func TestSnowflakeHelpers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		less bool
	}{
		{"9", "10", true}, {"10", "9", false}, {"175928847299117063", "175928847299117064", true},
		{"175928847299117063", "175928847299117063", false}, {"", "1", true},
	}
	for _, tc := range cases {
		if got := snowLess(tc.a, tc.b); got != tc.less {
			t.Errorf("snowLess(%q,%q) = %v", tc.a, tc.b, got)
		}
	}
	if got := snowPred("175928847299117063"); got != "175928847299117062" {
		t.Errorf("snowPred = %s", got)
	}
	// Discord's documented example: 175928847299117063 → 2016-04-30 11:18:25.796 UTC.
	if got := snowTime("175928847299117063").UTC(); !got.Equal(time.Date(2016, 4, 30, 11, 18, 25, 796e6, time.UTC)) {
		t.Errorf("snowTime = %s", got)
	}
	long := strings.Repeat("x", 80)
	first, again := discordNonce(long), discordNonce(long)
	if discordNonce("short") != "short" || len(first) != 25 || first != again {
		t.Errorf("discordNonce not deterministic/bounded")
	}
}

// FuzzMentionStripping feeds arbitrary message content through normalize:
// the bot's mention never survives in Text, and Mentioned says whether it
// was there.
func FuzzMentionStripping(f *testing.F) {
	const bot = "100000000000000001"
	for _, s := range []string{"hi", "<@" + bot + "> hi", "<@!" + bot + ">", "a<@" + bot + "><@!" + bot + ">b", "<@<@" + bot + ">>", "<@123> x", "  <@" + bot + ">\n\tok"} {
		f.Add(s)
	}
	ch, err := New(Options{Token: "x", MaxMediaBytes: -1})
	if err != nil {
		f.Fatal(err)
	}
	ch.setBotID(bot)
	f.Fuzz(func(t *testing.T, content string) {
		m := &discordgo.Message{ID: "5", ChannelID: "6", Content: content, Author: &discordgo.User{ID: "7"}}
		msg, ok := ch.normalize(context.Background(), m)
		if !ok {
			t.Fatal("user message dropped")
		}
		had := strings.Contains(content, "<@"+bot+">") || strings.Contains(content, "<@!"+bot+">")
		if msg.Mentioned != had {
			t.Errorf("Mentioned = %v for %q", msg.Mentioned, content)
		}
		if strings.Contains(msg.Text, "<@"+bot+">") || strings.Contains(msg.Text, "<@!"+bot+">") {
			t.Errorf("mention survived: %q → %q", content, msg.Text)
		}
		if msg.Text != strings.TrimSpace(msg.Text) {
			t.Errorf("text not trimmed: %q", msg.Text)
		}
	})
}
