package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

const (
	guildID = "200000000000000001"
	chanID  = "300000000000000001"
	userID  = "400000000000000001"
	dmID    = "500000000000000001"
)

func TestDMRoundTrip(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)

	in := h.fake.UserSays(dmID, userID, "hello bot", fakediscord.SayOptions{AuthorName: "alice"})
	got := h.sink.wait(t, 1)[0]
	want := channels.Message{
		Channel: "discord", ChatID: dmID, MessageID: in.ID, Text: "hello bot", Direct: true,
		Sender: channels.Sender{ID: userID, Name: "alice"},
	}
	got.Time = time.Time{}
	if got.Channel != want.Channel || got.ChatID != want.ChatID || got.MessageID != want.MessageID ||
		got.Text != want.Text || got.Direct != want.Direct || got.Sender != want.Sender || got.ThreadID != "" || got.Mentioned {
		t.Fatalf("message = %+v, want %+v", got, want)
	}

	id, err := h.ch.Send(context.Background(), channels.Outgoing{
		Target: got.Target(), Text: "hi **alice**", ReplyTo: in.ID, Nonce: "turn1-0",
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := h.fake.WaitSent(t, dmID, 1, wait)
	if sent[0].ID != id || sent[0].Content != "hi **alice**" {
		t.Fatalf("fake has %+v; Send returned id %s", sent[0], id)
	}
	req := h.fake.MessageRequests()[0]
	if req.MessageReference != nil {
		t.Errorf("DM reply carried a message_reference: %+v", req.MessageReference)
	}
	if req.Nonce != "turn1-0" || !req.EnforceNonce {
		t.Errorf("nonce = %q enforce = %v, want turn1-0 with enforce_nonce", req.Nonce, req.EnforceNonce)
	}

	ident := h.fake.Identifies()[0]
	if ident.Intents != int(Intents) || ident.Intents&fakediscord.IntentMessageContent == 0 {
		t.Errorf("IDENTIFY intents = %b, want %b", ident.Intents, Intents)
	}
	if ident.Token != "Bot "+testToken {
		t.Errorf("IDENTIFY token is not the bot token")
	}
}

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

func TestLongAnswerIsChunkedInOrderWithIntactFences(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
	fake.AddChannel(guildID, chanID, "general")
	ch, _ := newChannel(t, fake, nil)

	var md strings.Builder
	md.WriteString("Here is the plan.\n\n")
	for i := 0; md.Len() < 2500; i++ {
		md.WriteString("Paragraph sentence number ")
		md.WriteString(strings.Repeat("x", i%7))
		md.WriteString(" keeps going and going.\n\n")
	}
	md.WriteString("```go\n")
	var code []string
	for i := 0; md.Len() < 5000; i++ {
		line := "fmt.Println(\"line " + string(rune('a'+i%26)) + "\") // " + strings.Repeat("=", i%10)
		code = append(code, line)
		md.WriteString(line + "\n")
	}
	md.WriteString("```\n\nDone.")
	if md.Len() < 5000 {
		t.Fatalf("input too short: %d", md.Len())
	}

	chunks := ch.Format(md.String())
	if len(chunks) < 3 {
		t.Fatalf("5000 characters became %d chunk(s)", len(chunks))
	}
	target := channels.Target{Channel: "discord", ChatID: chanID}
	var ids []string
	for i, c := range chunks {
		id, err := ch.Send(context.Background(), channels.Outgoing{Target: target, Text: c.Text, Plain: c.Plain, Nonce: "turn-x-" + string(rune('a'+i))})
		if err != nil {
			t.Fatalf("chunk %d (%d chars): %v", i, len(c.Text), err)
		}
		ids = append(ids, id)
	}
	sent := fake.Sent(chanID)
	if len(sent) != len(chunks) {
		t.Fatalf("fake has %d messages, want %d", len(sent), len(chunks))
	}
	var gotCode []string
	for i, m := range sent {
		if m.ID != ids[i] || m.Content != chunks[i].Text {
			t.Fatalf("message %d out of order or altered", i)
		}
		if n := len([]rune(m.Content)); n > MessageLimit {
			t.Errorf("message %d has %d characters", i, n)
		}
		if strings.Count(m.Content, "```")%2 != 0 {
			t.Errorf("message %d has an unbalanced code fence:\n%s", i, m.Content)
		}
		for _, l := range strings.Split(m.Content, "\n") {
			if strings.HasPrefix(l, "fmt.Println") {
				gotCode = append(gotCode, l)
			}
		}
	}
	if !slices.Equal(gotCode, code) {
		t.Errorf("code lines lost or reordered across chunks: got %d lines, want %d", len(gotCode), len(code))
	}
	if !strings.HasSuffix(sent[len(sent)-1].Content, "Done.") || !strings.HasPrefix(sent[0].Content, "Here is the plan.") {
		t.Errorf("first/last chunk do not carry the start/end of the answer")
	}
}

func TestResumeAfterDropDeliversGapOnce(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	m1 := h.fake.UserSays(dmID, userID, "before", fakediscord.SayOptions{})
	h.sink.wait(t, 1)

	h.fake.DropConnection()
	m2 := h.fake.UserSays(dmID, userID, "during gap 1", fakediscord.SayOptions{})
	m3 := h.fake.UserSays(dmID, userID, "during gap 2", fakediscord.SayOptions{})

	rs := h.fake.WaitResumes(t, 1, wait)
	if !rs[0].Accepted || rs[0].Seq == 0 {
		t.Fatalf("RESUME = %+v; want an accepted resume with the last sequence", rs[0])
	}
	got := h.sink.wait(t, 3)
	// After RESUMED the adapter also asks history for anything after the
	// last id it delivered; wait for that fetch, then check nothing doubled.
	h.fake.WaitFor(t, wait, "history fetch after m3", func() bool {
		return slices.ContainsFunc(h.fake.Requests(), func(r fakediscord.Request) bool {
			return r.Method == "GET" && r.Path == "/api/v9/channels/"+dmID+"/messages" && strings.Contains(r.Query, "after="+m3.ID)
		})
	})
	m4 := h.fake.UserSays(dmID, userID, "after", fakediscord.SayOptions{})
	got = h.sink.wait(t, 4)
	if want := []string{m1.ID, m2.ID, m3.ID, m4.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivered %v, want each exactly once in order %v\n%s", ids(got), want, fmtMsgs(got))
	}
	if n := len(h.fake.Identifies()); n != 1 {
		t.Errorf("IDENTIFY sent %d times; a resume needs only the first", n)
	}
	if !h.ch.Ready() {
		t.Errorf("not Ready after RESUMED")
	}
}

func TestExpiredSessionReidentifiesAndFetchesHistory(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	m1 := h.fake.UserSays(chanID, userID, "one", fakediscord.SayOptions{GuildID: guildID})
	h.sink.wait(t, 1)

	h.fake.ExpireSession()
	h.fake.DropConnection()
	// Not dispatched (no valid session): only history has them.
	m2 := h.fake.UserSays(chanID, userID, "two", fakediscord.SayOptions{GuildID: guildID})
	m3 := h.fake.UserSays(chanID, userID, "three <@"+h.fake.BotID()+">", fakediscord.SayOptions{GuildID: guildID})

	rs := h.fake.WaitResumes(t, 1, wait)
	if rs[0].Accepted {
		t.Fatalf("expired session was resumed")
	}
	h.fake.WaitIdentifies(t, 2, wait)
	got := h.sink.wait(t, 3)
	if want := []string{m1.ID, m2.ID, m3.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivered %v, want %v", ids(got), want)
	}
	if !got[2].Mentioned || got[2].Text != "three" || got[2].Direct || got[2].ChatID != chanID {
		t.Errorf("history message normalized differently from a live one: %+v", got[2])
	}
	m4 := h.fake.UserSays(chanID, userID, "four", fakediscord.SayOptions{GuildID: guildID})
	if got := h.sink.wait(t, 4); got[3].MessageID != m4.ID || len(got) != 4 {
		t.Fatalf("after re-identify: %v", ids(got))
	}
}

func TestHeartbeatACKsStopReconnects(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{HeartbeatInterval: 30 * time.Millisecond}, nil)
	h.fake.SetHeartbeatACK(false)
	// discordgo gives up after ~5 intervals without ACK, closes, and Run
	// reopens with RESUME (the fake drops sessions closed with 1000, so the
	// resume is refused and a fresh IDENTIFY follows).
	h.fake.WaitResumes(t, 1, wait)
	h.fake.SetHeartbeatACK(true)
	h.fake.WaitIdentifies(t, 2, wait)
	if !slices.Contains(h.fake.ClientCloseCodes(), 1000) {
		t.Errorf("client close codes = %v; want the 1000 close discordgo sends", h.fake.ClientCloseCodes())
	}
	waitReady(t, h)
	in := h.fake.UserSays(dmID, userID, "still there?", fakediscord.SayOptions{})
	if got := h.sink.wait(t, 1); got[0].MessageID != in.ID {
		t.Fatalf("got %v", ids(got))
	}
}

func TestDeafConnectionEndsRun(t *testing.T) {
	t.Parallel()
	h := startNoWait(t, fakediscord.Options{HeartbeatInterval: time.Minute}, func(o *Options) {
		o.WatchdogTimeout = 300 * time.Millisecond
	}, func(f *fakediscord.Server) { f.SetHeartbeatACK(false) })
	err := h.runErr(t)
	if err == nil || !strings.Contains(err.Error(), "deaf") {
		t.Fatalf("Run returned %v; want the deaf-connection error", err)
	}
	if h.ch.Ready() {
		t.Errorf("Ready() true after Run returned")
	}
}

func TestMessageContentIntentRefused(t *testing.T) {
	t.Parallel()
	h := startNoWait(t, fakediscord.Options{}, nil, func(f *fakediscord.Server) { f.RefuseMessageContent(true) })
	err := h.runErr(t)
	if err == nil {
		t.Fatal("Run returned nil")
	}
	if !errors.Is(err, ErrMessageContentRefused) || err.Error() != ErrMessageContentRefused.Error() {
		t.Fatalf("Run error = %q", err)
	}
	if !strings.Contains(err.Error(), "Privileged Gateway Intents") {
		t.Errorf("error does not say where to fix it: %v", err)
	}
	if n := strings.Count(h.logs.String(), "refused the MESSAGE CONTENT intent"); n != 1 {
		t.Errorf("log has %d lines about 4014, want exactly 1:\n%s", n, h.logs.String())
	}
	if n := len(h.fake.Identifies()); n != 1 {
		t.Errorf("IDENTIFY attempts = %d; a 4014 must not be retried", n)
	}
}

// The refusal can also come later: the session expires, discordgo's RESUME
// is answered with INVALID_SESSION and its re-IDENTIFY (sent from its own
// goroutine) is closed with 4014. Run must still end with the clear error.
func TestMessageContentIntentRefusedOnReidentify(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	h.fake.RefuseMessageContent(true)
	h.fake.ExpireSession()
	h.fake.DropConnection()
	err := h.runErr(t)
	if !errors.Is(err, ErrMessageContentRefused) {
		t.Fatalf("Run error = %v; want ErrMessageContentRefused", err)
	}
	if n := strings.Count(h.logs.String(), "refused the MESSAGE CONTENT intent"); n != 1 {
		t.Errorf("log has %d lines about 4014, want exactly 1:\n%s", n, h.logs.String())
	}
	if rs := h.fake.Resumes(); len(rs) == 0 || rs[0].Accepted {
		t.Errorf("resumes = %+v; want one refused RESUME first", rs)
	}
}

func TestAllowedMentionsNeverPingEveryoneOrRoles(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
	fake.AddChannel(guildID, chanID, "general")
	user := fake.UserSays(chanID, userID, "ping me", fakediscord.SayOptions{GuildID: guildID})
	ch, _ := newChannel(t, fake, nil)
	ctx := context.Background()
	target := channels.Target{Channel: "discord", ChatID: chanID}

	id, err := ch.Send(ctx, channels.Outgoing{Target: target, Text: "@everyone @here <@&123> <@" + userID + ">", ReplyTo: user.ID, Nonce: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Send(ctx, channels.Outgoing{Target: target, Text: "second"}); err != nil {
		t.Fatal(err)
	}
	if err := ch.Edit(ctx, target, id, "edited @everyone"); err != nil {
		t.Fatal(err)
	}
	reqs := fake.MessageRequests()
	if len(reqs) != 3 {
		t.Fatalf("recorded %d message requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		am := r.AllowedMentions
		if am == nil || am.Parse == nil || len(am.Parse) != 0 || len(am.Roles) != 0 || len(am.Users) != 0 {
			t.Errorf("request %d (%s) allowed_mentions = %+v; want parse [] and no roles/users", i, r.Method, am)
		}
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(r.Raw, &raw)
		if !strings.Contains(string(raw["allowed_mentions"]), `"parse":[]`) {
			t.Errorf("request %d raw allowed_mentions = %s", i, raw["allowed_mentions"])
		}
	}
	if reqs[0].AllowedMentions == nil || !reqs[0].AllowedMentions.RepliedUser {
		t.Errorf("reply does not allow pinging the replied user: %+v", reqs[0].AllowedMentions)
	}
	if got := fake.Sent(chanID)[0].Content; got != "edited @everyone" {
		t.Errorf("edit not applied: %q", got)
	}
}

func TestNonceMakesResendIdempotent(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
	fake.AddChannel(guildID, chanID, "general")
	ch, _ := newChannel(t, fake, nil)
	out := channels.Outgoing{Target: channels.Target{Channel: "discord", ChatID: chanID}, Text: "once", Nonce: "a-very-long-turn-identifier-0123456789:chunk-3"}

	fake.DropNextPost(1)
	_, err := ch.Send(context.Background(), out)
	if kind, _ := channels.ClassifyError(err); kind != channels.KindAmbiguous {
		t.Fatalf("lost response classified %v (%v); want ambiguous", kind, err)
	}
	id, err := ch.Send(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent(chanID)
	if len(sent) != 1 || sent[0].ID != id {
		t.Fatalf("resend with the same nonce created %d messages (%+v)", len(sent), sent)
	}
	reqs := fake.MessageRequests()
	if reqs[0].Nonce == "" || len(reqs[0].Nonce) > 25 || reqs[0].Nonce != reqs[1].Nonce || !reqs[1].EnforceNonce {
		t.Errorf("nonces %q/%q (enforce %v): want the same ≤25-char nonce with enforce_nonce", reqs[0].Nonce, reqs[1].Nonce, reqs[1].EnforceNonce)
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		retryAfter float64
		global     bool
		wantErr    bool
		wantPosts  int
	}{
		{"short per-route limit is waited out", 0.15, false, false, 2},
		{"long limit surfaces as RateLimited", 42.5, false, true, 1},
		{"global limit surfaces as RateLimited", 30, true, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
			fake.AddChannel(guildID, chanID, "general")
			ch, _ := newChannel(t, fake, nil)
			fake.RateLimitNext(1, tc.retryAfter, tc.global)
			id, err := ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "discord", ChatID: chanID}, Text: "hi"})
			reqs := fake.MessageRequests()
			if len(reqs) != tc.wantPosts {
				t.Fatalf("%d POSTs, want %d", len(reqs), tc.wantPosts)
			}
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				if gap := reqs[1].At.Sub(reqs[0].At); gap < 150*time.Millisecond {
					t.Errorf("retried after %s; retry_after was 150ms", gap)
				}
				if sent := fake.Sent(chanID); len(sent) != 1 || sent[0].ID != id {
					t.Errorf("fake has %+v", sent)
				}
				return
			}
			kind, after := channels.ClassifyError(err)
			want := time.Duration(tc.retryAfter * float64(time.Second))
			if kind != channels.KindRateLimited || after != want {
				t.Fatalf("error %v classified %v after %s; want rate_limited after %s", err, kind, after, want)
			}
		})
	}
}

func TestSendErrorClassification(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		script func(*fakediscord.Server)
		chat   string
		want   channels.SendErrorKind
	}{
		{"unknown channel 404", nil, "999", channels.KindPermanent},
		{"missing permissions 403", func(f *fakediscord.Server) { f.FailNext(1, http.StatusForbidden, 50013, "Missing Permissions") }, chanID, channels.KindPermanent},
		{"bad request 400", func(f *fakediscord.Server) { f.FailNext(1, http.StatusBadRequest, 50035, "Invalid Form Body") }, chanID, channels.KindPermanent},
		{"server error 500", func(f *fakediscord.Server) { f.FailNext(1, http.StatusInternalServerError, 0, "oops") }, chanID, channels.KindTemporary},
		{"response lost after write", func(f *fakediscord.Server) { f.DropNextPost(1) }, chanID, channels.KindAmbiguous},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
			fake.AddChannel(guildID, chanID, "general")
			if tc.script != nil {
				tc.script(fake)
			}
			ch, _ := newChannel(t, fake, nil)
			_, err := ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "discord", ChatID: tc.chat}, Text: "hi"})
			if kind, _ := channels.ClassifyError(err); kind != tc.want {
				t.Fatalf("error %v classified %v, want %v", err, kind, tc.want)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("error text carries the token: %v", err)
			}
		})
	}

	t.Run("unreachable API before write is temporary", func(t *testing.T) {
		t.Parallel()
		fake := fakediscord.New(fakediscord.Options{Token: testToken})
		fake.Close() // port now refuses connections
		ch, _ := newChannel(t, fake, nil)
		_, err := ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "discord", ChatID: chanID}, Text: "hi"})
		if kind, _ := channels.ClassifyError(err); kind != channels.KindTemporary {
			t.Fatalf("error %v classified %v, want temporary", err, kind)
		}
	})
}

func TestEditAndTyping(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
	fake.AddChannel(guildID, chanID, "general")
	user := fake.UserSays(chanID, userID, "hi", fakediscord.SayOptions{GuildID: guildID})
	ch, _ := newChannel(t, fake, nil)
	ctx := context.Background()
	target := channels.Target{Channel: "discord", ChatID: chanID}

	stop := ch.StartTyping(ctx, target)
	fake.WaitTyping(t, chanID, 2, wait) // refreshed every TypingInterval
	stop()
	stop() // idempotent
	after := fake.Typing(chanID)

	id, err := ch.Send(ctx, channels.Outgoing{Target: target, Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"draft, growing", "draft, growing, done"} {
		if err := ch.Edit(ctx, target, id, text); err != nil {
			t.Fatalf("Edit: %v", err)
		}
	}
	if got := fake.Sent(chanID); len(got) != 1 || got[0].Content != "draft, growing, done" || got[0].EditedTimestamp == nil {
		t.Fatalf("after edits: %+v", got)
	}
	err = ch.Edit(ctx, target, user.ID, "hijack")
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent {
		t.Errorf("editing a user's message: %v classified %v, want permanent", err, kind)
	}
	if fake.Typing(chanID) != after {
		t.Errorf("typing continued after stop: %d → %d", after, fake.Typing(chanID))
	}
	if ch.EditInterval() <= 0 {
		t.Errorf("EditInterval = %s", ch.EditInterval())
	}
	// A typing failure never surfaces: unknown channel 404s quietly.
	stop = ch.StartTyping(ctx, channels.Target{Channel: "discord", ChatID: "nope"})
	stop()
}

func TestImageAttachments(t *testing.T) {
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
	if got.MessageID != in.ID || len(got.Media) != 1 {
		t.Fatalf("media = %d items (%+v); want only cat.png", len(got.Media), got.Media)
	}
	if m := got.Media[0]; m.Name != "cat.png" || m.MIME != "image/png" || string(m.Data) != string(png) {
		t.Errorf("media = %s %s %d bytes", m.Name, m.MIME, len(m.Data))
	}
	var downloads int
	for _, r := range h.fake.Requests() {
		if strings.HasPrefix(r.Path, "/attachments/") {
			downloads++
		}
	}
	if downloads != 2 { // cat.png and the lying one (cut off at the cap)
		t.Errorf("%d attachment downloads, want 2 (the CDN host must be rewritten to the fake)", downloads)
	}
}

func TestSinkFailureIsCaughtUpFromHistory(t *testing.T) {
	t.Parallel()
	h := startNoWait(t, fakediscord.Options{}, nil, func(*fakediscord.Server) {})
	h.sink.mu.Lock()
	h.sink.failOn[1] = errors.New("inbox write failed")
	h.sink.mu.Unlock()
	waitReady(t, h)
	m1 := h.fake.UserSays(chanID, userID, "first", fakediscord.SayOptions{GuildID: guildID})
	// m1 is not accepted; the adapter retries it from history on its own.
	got := h.sink.wait(t, 1)
	m2 := h.fake.UserSays(chanID, userID, "second", fakediscord.SayOptions{GuildID: guildID})
	got = h.sink.wait(t, 2)
	if want := []string{m1.ID, m2.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivered %v, want %v", ids(got), want)
	}
}

func TestGatewayURLOverride(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: testToken})
	ch, _ := newChannel(t, fake, func(o *Options) {
		o.GatewayURL = fake.GatewayURL()
	})
	sink := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, sink) }()
	defer func() { cancel(); <-done }()
	fake.WaitFor(t, wait, "ready", ch.Ready)
	for _, r := range fake.Requests() {
		if strings.HasSuffix(r.Path, "/gateway") || strings.HasSuffix(r.Path, "/gateway/bot") {
			t.Errorf("gateway discovery hit the API (%s) although gateway_url was set", r.Path)
		}
	}
}

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no token", Options{}, "token is required"},
		{"api url with path", Options{Token: "x", APIURL: "http://127.0.0.1:1/api/v9"}, "scheme://host"},
		{"api url not http", Options{Token: "x", APIURL: "ftp://h"}, "scheme://host"},
		{"gateway url not ws", Options{Token: "x", GatewayURL: "http://h"}, "ws://"},
	}
	for _, tc := range cases {
		if _, err := New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	o := Options{Token: testToken}
	if s := o.String(); strings.Contains(s, testToken) {
		t.Errorf("Options.String leaks the token: %s", s)
	}
	ch, err := New(Options{Token: "Bot abc"})
	if err != nil || ch.token != "Bot abc" || ch.Name() != "discord" {
		t.Errorf("New with prefixed token: %v %q", err, ch.token)
	}
	if ch.Ready() {
		t.Errorf("Ready before Run")
	}
}

func TestBadTokenEndsRun(t *testing.T) {
	t.Parallel()
	fake := fakediscord.Start(t, fakediscord.Options{Token: "the-right-one"})
	ch, _ := newChannel(t, fake, nil)
	err := ch.Run(context.Background(), newSink())
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), testToken) {
		t.Fatalf("Run = %v; want a 401 error without the token", err)
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
	if discordNonce("short") != "short" || len(discordNonce(strings.Repeat("x", 80))) != 25 ||
		discordNonce(strings.Repeat("x", 80)) != discordNonce(strings.Repeat("x", 80)) {
		t.Errorf("discordNonce not deterministic/bounded")
	}
}

func TestReconnectAndInvalidSessionOpcodes(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	if !h.fake.Identifies()[0].Compress {
		t.Errorf("discordgo asked for compress=false; the fake's zlib path is untested")
	}
	m1 := h.fake.UserSays(dmID, userID, "one", fakediscord.SayOptions{})
	h.sink.wait(t, 1)

	// op 7: discordgo closes with 1012 (session kept) and Run resumes.
	h.fake.SendReconnect()
	if rs := h.fake.WaitResumes(t, 1, wait); !rs[0].Accepted {
		t.Fatalf("RESUME after op 7 refused: %+v", rs[0])
	}
	m2 := h.fake.UserSays(dmID, userID, "two", fakediscord.SayOptions{})
	h.sink.wait(t, 2)

	// op 9 (not resumable) on a live connection: discordgo re-IDENTIFYs on
	// the same socket; READY follows and delivery continues.
	h.fake.InvalidateSession(false)
	h.fake.WaitIdentifies(t, 2, wait)
	h.fake.WaitOnline(t, wait)
	m3 := h.fake.UserSays(dmID, userID, "three", fakediscord.SayOptions{})
	got := h.sink.wait(t, 3)
	if want := []string{m1.ID, m2.ID, m3.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivered %v, want %v", ids(got), want)
	}
	if !slices.Contains(h.fake.ClientCloseCodes(), 1012) {
		t.Errorf("close codes %v; want 1012 after op 7", h.fake.ClientCloseCodes())
	}
}

func TestRunTwiceIsRefused(t *testing.T) {
	t.Parallel()
	h := start(t, fakediscord.Options{}, nil)
	if err := h.ch.Run(context.Background(), newSink()); err == nil || !strings.Contains(err.Error(), "already active") {
		t.Fatalf("second Run = %v", err)
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
