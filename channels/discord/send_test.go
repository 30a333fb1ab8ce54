package discord

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
)

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
		if n := len([]rune(m.Content)); n > ChunkLimit {
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
