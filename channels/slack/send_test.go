package slack

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

func TestSendErrorClassification(t *testing.T) {
	target := channels.Target{Channel: "slack", ChatID: "C1"}
	tests := []struct {
		name      string
		script    func(f *fakeslack.Server, method string)
		edit      bool
		wantKind  channels.SendErrorKind
		wantAfter time.Duration
	}{
		{"429 with Retry-After", func(f *fakeslack.Server, m string) { f.RateLimitNext(m, 1, 7) }, false, channels.KindRateLimited, 7 * time.Second},
		{"429 on edit", func(f *fakeslack.Server, m string) { f.RateLimitNext(m, 1, 3) }, true, channels.KindRateLimited, 3 * time.Second},
		{"channel_not_found", func(f *fakeslack.Server, m string) { f.FailNext(m, 1, "channel_not_found", 0) }, false, channels.KindPermanent, 0},
		{"not_in_channel", func(f *fakeslack.Server, m string) { f.FailNext(m, 1, "not_in_channel", 0) }, false, channels.KindPermanent, 0},
		{"invalid_auth", func(f *fakeslack.Server, m string) { f.FailNext(m, 1, "invalid_auth", 0) }, false, channels.KindPermanent, 0},
		{"internal_error on post may have posted", func(f *fakeslack.Server, m string) { f.FailNext(m, 1, "internal_error", 0) }, false, channels.KindAmbiguous, 0},
		{"internal_error on edit is retryable", func(f *fakeslack.Server, m string) { f.FailNext(m, 1, "internal_error", 0) }, true, channels.KindTemporary, 0},
		{"503 on post may have posted", func(f *fakeslack.Server, m string) { f.FailNext(m, 1, "service_unavailable", 503) }, false, channels.KindAmbiguous, 0},
		{"503 on edit is retryable", func(f *fakeslack.Server, m string) { f.FailNext(m, 1, "service_unavailable", 503) }, true, channels.KindTemporary, 0},
		{"service_unavailable answer", func(f *fakeslack.Server, m string) { f.FailNext(m, 1, "service_unavailable", 0) }, false, channels.KindTemporary, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeslack.New(t, fakeslack.Options{})
			c, err := New(testOptions(f))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var ts string
			if tt.edit {
				if ts, err = c.Send(ctx, channels.Outgoing{Target: target, Text: "draft"}); err != nil {
					t.Fatal(err)
				}
				tt.script(f, "chat.update")
				err = c.Edit(ctx, target, ts, "final")
			} else {
				tt.script(f, "chat.postMessage")
				_, err = c.Send(ctx, channels.Outgoing{Target: target, Text: "hello"})
			}
			if err == nil {
				t.Fatal("no error")
			}
			kind, after := channels.ClassifyError(err)
			if kind != tt.wantKind || after != tt.wantAfter {
				t.Fatalf("classified %v (retry after %v), want %v (%v); err: %v", kind, after, tt.wantKind, tt.wantAfter, err)
			}
			if strings.Contains(err.Error(), f.BotToken()) {
				t.Fatalf("error leaks the token: %v", err)
			}
			// The next call goes through: scripts are one-shot.
			if tt.edit {
				err = c.Edit(ctx, target, ts, "final")
			} else {
				_, err = c.Send(ctx, channels.Outgoing{Target: target, Text: "hello"})
			}
			if err != nil {
				t.Fatalf("second attempt: %v", err)
			}
		})
	}
}

// A connection that dies after the request was written: the post may exist.
// A connection that was never made: nothing was posted.
func TestSendTransportFailures(t *testing.T) {
	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm() // read the whole request, then vanish without answering
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer hangup.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/api/"
	_ = ln.Close()

	tests := []struct {
		name   string
		apiURL string
		edit   bool
		want   channels.SendErrorKind
	}{
		{"post written then connection dropped", hangup.URL + "/api/", false, channels.KindAmbiguous},
		{"edit written then connection dropped", hangup.URL + "/api/", true, channels.KindTemporary},
		{"connection refused", refused, false, channels.KindTemporary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Options{BotToken: "xoxb-secret-token", AppToken: "xapp-x", APIURL: tt.apiURL,
				HTTPClient: &http.Client{Timeout: 2 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			target := channels.Target{Channel: "slack", ChatID: "C1"}
			if tt.edit {
				err = c.Edit(context.Background(), target, "1700000000.000001", "x")
			} else {
				_, err = c.Send(context.Background(), channels.Outgoing{Target: target, Text: "x"})
			}
			if kind, _ := channels.ClassifyError(err); kind != tt.want {
				t.Fatalf("classified %v, want %v: %v", kind, tt.want, err)
			}
			if strings.Contains(err.Error(), "xoxb-secret-token") {
				t.Fatalf("error leaks the token: %v", err)
			}
		})
	}
}

func TestFormatProducesMrkdwnChunks(t *testing.T) {
	c, err := New(Options{BotToken: "xoxb", AppToken: "xapp"})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Format("**Bold** and [docs](https://example.com/a) & <tags>")
	if len(got) != 1 {
		t.Fatalf("chunks = %+v", got)
	}
	for _, want := range []string{"*Bold*", "<https://example.com/a|docs>", "&amp;", "&lt;tags&gt;"} {
		if !strings.Contains(got[0].Text, want) {
			t.Errorf("mrkdwn %q lacks %q", got[0].Text, want)
		}
	}
	if strings.Contains(got[0].Text, "**") {
		t.Errorf("Markdown bold left in mrkdwn: %q", got[0].Text)
	}

	long := strings.Repeat("A sentence that keeps going. ", 400) + "\n```go\n" + strings.Repeat("x := 1\n", 300) + "```\n"
	chunks := c.Format(long)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks for %d characters", len(chunks), len(long))
	}
	for i, ch := range chunks {
		if n := len([]rune(ch.Text)); n > ChunkLimit {
			t.Errorf("chunk %d has %d runes, over %d", i, n, ChunkLimit)
		}
		if strings.Count(ch.Text, "```")%2 != 0 {
			t.Errorf("chunk %d leaves a code fence open", i)
		}
	}
}

// After a crash during chat.postMessage the outbound path asks Delivered
// before resending: a post that landed is found in the conversation (or the
// thread), one that did not is not.
func TestDeliveredFindsPostsThatLanded(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	ctx := context.Background()
	since := time.Now() // Delivered learns the bot's identity itself if Run has not yet

	dm := channels.Target{Channel: "slack", ChatID: fakeslack.DMChannel("U100")}
	ts, err := r.c.Send(ctx, channels.Outgoing{Target: dm, Text: "the answer"})
	if err != nil {
		t.Fatal(err)
	}
	id, found, err := r.c.Delivered(ctx, channels.Outgoing{Target: dm, Text: "the answer"}, since)
	if err != nil || !found || id != ts {
		t.Fatalf("Delivered(landed) = %q, %v, %v; want %q", id, found, err, ts)
	}
	if _, found, _ := r.c.Delivered(ctx, channels.Outgoing{Target: dm, Text: "never posted"}, since); found {
		t.Fatal("a text that was never posted was reported delivered")
	}
	thread := channels.Target{Channel: "slack", ChatID: "C200", ThreadID: "1700000000.000100"}
	tts, err := r.c.Send(ctx, channels.Outgoing{Target: thread, Text: "in the thread"})
	if err != nil {
		t.Fatal(err)
	}
	if id, found, err := r.c.Delivered(ctx, channels.Outgoing{Target: thread, Text: "in the thread"}, since); err != nil || !found || id != tts {
		t.Fatalf("Delivered(thread) = %q, %v, %v; want %q", id, found, err, tts)
	}
}

func TestAssistantThreadStatusAsTyping(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())

	ch, thread, env := f.AssistantThreadStarted("U1")
	f.WaitAcked(t, env, wait)
	stop := r.c.StartTyping(context.Background(), channels.Target{Channel: "slack", ChatID: ch, ThreadID: thread})
	stop()
	stop() // idempotent
	st := f.Statuses()
	if len(st) != 2 || st[0] != (fakeslack.Status{Channel: ch, ThreadTS: thread, Status: typingStatus}) ||
		st[1] != (fakeslack.Status{Channel: ch, ThreadTS: thread, Status: ""}) {
		t.Fatalf("statuses = %+v, want set then cleared once", st)
	}

	// Outside an assistant thread nothing is posted.
	r.c.StartTyping(context.Background(), channels.Target{Channel: "slack", ChatID: "C1"})()
	if n := f.Calls("assistant.threads.setStatus") + f.Calls("chat.postMessage"); n != 2 {
		t.Fatalf("%d calls, want no new call for a plain channel", n-2)
	}
}
