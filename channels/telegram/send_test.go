package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"golang.org/x/time/rate"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 13 defect 13: a server that answers every sendMessage with
// {"ok":false} (no error_code) was treated as temporary, so each reply was
// retried for half a minute and then dropped. A refusal is permanent; only
// 5xx and 420 are retried.
func TestOkFalseAnswersClassified(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		wantKind channels.SendErrorKind
		wantText string
	}{
		{"ok false without a code", http.StatusOK, `{"ok":false,"description":"sending is disabled for this bot"}`, channels.KindPermanent, "sending is disabled for this bot"},
		{"ok false only", http.StatusOK, `{"ok":false}`, channels.KindPermanent, "error response from telegram"},
		{"unlisted 4xx", 418, `{"ok":false,"error_code":418,"description":"I'm a teapot"}`, channels.KindPermanent, "teapot"},
		{"bad gateway", http.StatusBadGateway, `{"ok":false,"error_code":502,"description":"Bad Gateway"}`, channels.KindTemporary, "Bad Gateway"},
		{"flood 420", 420, `{"ok":false,"error_code":420,"description":"Flood"}`, channels.KindTemporary, "Flood"},
		{"server error", 500, `{"ok":false,"error_code":500,"description":"Internal Server Error"}`, channels.KindTemporary, "Internal Server Error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			ch, err := New(Options{Token: faketelegram.DefaultToken, APIURL: srv.URL, PerChatRate: rate.Inf, GlobalRate: rate.Inf})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "telegram", ChatID: "42"}, Text: "hi"})
			if kind, _ := channels.ClassifyError(err); kind != c.wantKind {
				t.Errorf("classified %v, want %v (err %v)", kind, c.wantKind, err)
			}
			if err == nil || !strings.Contains(err.Error(), c.wantText) || strings.Contains(err.Error(), faketelegram.DefaultToken) {
				t.Errorf("error %v should carry %q and not the token", err, c.wantText)
			}
		})
	}
}

// closedIdle fails every request the way net/http does when it picked a
// kept-alive connection the server had already closed: nothing was written.
type closedIdle struct{}

func (closedIdle) RoundTrip(r *http.Request) (*http.Response, error) {
	// Drain the multipart body first: the library's body writer goroutine
	// formats the error while the library rewrites it (a race of the library
	// that -race reports when the body is abandoned).
	_, _ = io.Copy(io.Discard, r.Body)
	return nil, errors.New("http: server closed idle connection")
}

// The flake of TestSendErrorClassification: a send on a kept-alive connection
// the server had closed was classified ambiguous, but the request was never
// written, so it is temporary (safe to retry).
func TestServerClosedIdleConnectionIsTemporary(t *testing.T) {
	ch, err := New(Options{Token: faketelegram.DefaultToken, APIURL: "http://127.0.0.1:1", PerChatRate: rate.Inf, GlobalRate: rate.Inf,
		HTTPClient: &http.Client{Transport: closedIdle{}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "telegram", ChatID: "42"}, Text: "hi"})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindTemporary {
		t.Errorf("server closed idle connection classified %v, want temporary: %v", kind, err)
	}
}

func TestParseEntitiesFallsBackToPlain(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	target := channels.Target{Channel: "telegram", ChatID: "42"}

	// Markup Telegram itself rejects (unclosed tag).
	if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "<b>bold without end", Plain: "bold without end"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	// A scripted rejection of otherwise valid markup.
	r.fake.FailNext("sendMessage", 1, faketelegram.CantParseEntities())
	if _, err := r.ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "<i>fine</i>", Plain: "fine"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := r.fake.WaitSent(t, 42, 2, waitLong)
	for i, want := range []string{"bold without end", "fine"} {
		if sent[i].Text != want || sent[i].ParseMode != "" {
			t.Errorf("message %d = %q (parse mode %q), want plain %q", i, sent[i].Text, sent[i].ParseMode, want)
		}
	}
	if n := len(r.fake.Requests("sendMessage")); n != 4 {
		t.Errorf("sendMessage calls = %d, want 4 (two rejected, two plain resends)", n)
	}
}

func TestSendErrorClassification(t *testing.T) {
	r := newRig(t, nil)
	// Run's deleteWebhook must have finished before the fake is closed at the
	// end, or Run fails with the fake's shutdown (a flake, 1 run in ~50).
	waitReady(t, r.ch)
	const group, super = -600, -100600
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	r.fake.AddChat(faketelegram.Chat{ID: group, Type: "group", Title: "Old"})
	send := func(chat int64) error {
		_, err := r.ch.Send(context.Background(), channels.Outgoing{
			Target: channels.Target{Channel: "telegram", ChatID: fmt.Sprint(chat), ThreadID: ""}, Text: "x"})
		return err
	}
	cases := []struct {
		name      string
		setup     func()
		chat      int64
		wantKind  channels.SendErrorKind
		wantAfter time.Duration
		wantText  string
	}{
		{name: "429", setup: func() { r.fake.FailNext("sendMessage", 1, faketelegram.TooManyRequests(7)) },
			chat: 42, wantKind: channels.KindRateLimited, wantAfter: 7 * time.Second, wantText: "retry after 7"},
		{name: "blocked 403", setup: func() { r.fake.FailNext("sendMessage", 1, faketelegram.Forbidden()) },
			chat: 42, wantKind: channels.KindPermanent, wantText: "bot was blocked by the user"},
		{name: "kicked 403", setup: func() { r.fake.Block(group) },
			chat: group, wantKind: channels.KindPermanent, wantText: "kicked"},
		{name: "server error", setup: func() { r.fake.Unblock(group); r.fake.FailNext("sendMessage", 1, faketelegram.InternalError()) },
			chat: 42, wantKind: channels.KindTemporary, wantText: "Internal Server Error"},
		{name: "unknown chat", setup: func() {}, chat: 31337, wantKind: channels.KindPermanent, wantText: "chat not found"},
		{name: "migrated", setup: func() { r.fake.MigrateChat(group, super) },
			chat: group, wantKind: channels.KindPermanent, wantText: "upgraded to supergroup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			err := send(tc.chat)
			if err == nil {
				t.Fatal("Send succeeded")
			}
			kind, after := channels.ClassifyError(err)
			if kind != tc.wantKind || after != tc.wantAfter {
				t.Errorf("classified %v / %v, want %v / %v (err %v)", kind, after, tc.wantKind, tc.wantAfter, err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not mention %q", err, tc.wantText)
			}
			if strings.Contains(err.Error(), r.fake.Token()) {
				t.Errorf("error shows the token: %v", err)
			}
		})
	}

	// The migration error names the new chat, for the handler to move the session.
	err := send(group)
	var mig *MigratedError
	if !errors.As(err, &mig) || mig.NewChatID != super {
		t.Fatalf("errors.As MigratedError: %v", err)
	}
	var mover interface{ MovedTo() channels.Target }
	if !errors.As(err, &mover) || mover.MovedTo().String() != fmt.Sprintf("telegram:%d", super) {
		t.Errorf("MovedTo = %v", mover)
	}
	// Sending to the new id works.
	if err := send(super); err != nil {
		t.Errorf("send to the supergroup: %v", err)
	}

	// Transport: nothing listening → temporary (never sent), token hidden.
	// The adapter's client keeps its connections (httptest's Close only
	// drops those of http.DefaultTransport): drop them as a restarted
	// server's would be gone.
	r.fake.Close()
	r.ch.client.CloseIdleConnections()
	err = send(42)
	if kind, _ := channels.ClassifyError(err); kind != channels.KindTemporary {
		t.Errorf("connection refused classified %v: %v", kind, err)
	}
	if err == nil || strings.Contains(err.Error(), r.fake.Token()) {
		t.Errorf("transport error shows the token or is nil: %v", err)
	}
}

func TestAmbiguousWhenConnectionDropsAfterRequest(t *testing.T) {
	// A server that reads the request and hangs up without answering: the
	// message may or may not have been posted.
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("no hijacker")
			return
		}
		conn, _, _ := hj.Hijack()
		_ = conn.Close()
	}))
	defer drop.Close()
	ch, err := New(Options{Token: faketelegram.DefaultToken, APIURL: drop.URL, PerChatRate: rate.Inf, GlobalRate: rate.Inf})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ch.Send(context.Background(), channels.Outgoing{Target: channels.Target{Channel: "telegram", ChatID: "42"}, Text: "hi"})
	if kind, _ := channels.ClassifyError(err); kind != channels.KindAmbiguous {
		t.Errorf("dropped connection classified %v: %v", kind, err)
	}
	if strings.Contains(fmt.Sprint(err), faketelegram.DefaultToken) {
		t.Errorf("error shows the token: %v", err)
	}
}

func TestEdit(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	target := channels.Target{Channel: "telegram", ChatID: "42"}
	id, err := r.ch.Send(context.Background(), channels.Outgoing{Target: target, Text: "Thinking"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ch.Edit(context.Background(), target, id, "Thinking <b>harder</b>"); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	if err := r.ch.Edit(context.Background(), target, id, "Thinking <b>harder</b>"); err != nil {
		t.Errorf("unchanged edit must succeed, got %v", err)
	}
	// A bare message id works too; broken markup falls back to plain text.
	bare := strings.TrimPrefix(id, "42:")
	if err := r.ch.Edit(context.Background(), target, bare, "Done <b>now"); err != nil {
		t.Fatalf("Edit with broken markup: %v", err)
	}
	sent := r.fake.Sent(42)
	if len(sent) != 1 || sent[0].Plain != "Done now" || sent[0].Edits != 2 {
		t.Errorf("after edits: %+v", sent)
	}
	err = r.ch.Edit(context.Background(), target, "42:9999", "x")
	if kind, _ := channels.ClassifyError(err); kind != channels.KindPermanent || !strings.Contains(err.Error(), "message to edit not found") {
		t.Errorf("edit of a missing message: %v (%v)", err, kind)
	}
	if r.ch.EditInterval() != time.Second {
		t.Errorf("default EditInterval = %v", r.ch.EditInterval())
	}
}

func TestTypingStops(t *testing.T) {
	for _, how := range []string{"stop", "ctx"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t, nil)
			r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stop := r.ch.StartTyping(ctx, channels.Target{Channel: "telegram", ChatID: "42"})
			reqs := r.fake.WaitRequests(t, "sendChatAction", 3, waitLong)
			if reqs[0].Fields["action"] != "typing" || reqs[0].Fields["chat_id"] != "42" {
				t.Errorf("sendChatAction fields %v", reqs[0].Fields)
			}
			count := func() int { return len(r.fake.Requests("sendChatAction")) }
			if how == "stop" {
				stop()
				stop() // idempotent
			} else {
				// No synchronization point with ctx: wait for a quiet spell
				// of five refresh intervals (a refresh in flight at cancel
				// time may still land), then require silence.
				cancel()
				deadline := time.Now().Add(waitLong)
				for n := count(); ; {
					time.Sleep(5 * r.ch.opts.TypingInterval)
					m := count()
					if m == n {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("sendChatAction never stopped after ctx was canceled (%d calls)", m)
					}
					n = m
				}
			}
			n := count()
			time.Sleep(10 * r.ch.opts.TypingInterval)
			if m := count(); m != n {
				t.Errorf("sendChatAction continued after %s: %d → %d", how, n, m)
			}
			stop()
		})
	}
}

func TestTypingFailureIsOnlyLogged(t *testing.T) {
	r := newRig(t, nil)
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	r.fake.FailNext("sendChatAction", 2, faketelegram.Forbidden())
	stop := r.ch.StartTyping(context.Background(), channels.Target{Channel: "telegram", ChatID: "42"})
	r.fake.WaitRequests(t, "sendChatAction", 3, waitLong)
	stop()
	if !strings.Contains(r.logs.String(), "typing indicator failed") {
		t.Error("typing failure not logged")
	}
}

func TestPacingPerChat(t *testing.T) {
	r := newRig(t, func(o *Options) { o.PerChatRate = rate.Every(time.Hour); o.PerChatBurst = 1 })
	r.fake.AddChat(faketelegram.Chat{ID: 42, Type: "private"})
	r.fake.AddChat(faketelegram.Chat{ID: 43, Type: "private"})
	send := func(chat string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := r.ch.Send(ctx, channels.Outgoing{Target: channels.Target{Channel: "telegram", ChatID: chat}, Text: "x"})
		return err
	}
	if err := send("42", waitLong); err != nil {
		t.Fatalf("first send: %v", err)
	}
	// The limiter refuses at once when the next slot lies beyond the deadline.
	err := send("42", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "wait for send slot") {
		t.Errorf("second send in the same chat within the interval: %v", err)
	}
	if err := send("43", waitLong); err != nil {
		t.Errorf("another chat was held back: %v", err)
	}
	if n := len(r.fake.Requests("sendMessage")); n != 2 {
		t.Errorf("sendMessage calls = %d, want 2", n)
	}
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
