package faketelegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

type reply struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// call posts fields as JSON (the simplest encoding Telegram accepts).
func call(t *testing.T, s *Server, method string, fields map[string]any) reply {
	t.Helper()
	body, _ := json.Marshal(fields)
	return do(t, s.URL()+"/bot"+s.Token()+"/"+method, "application/json", body)
}

func do(t *testing.T, u, ct string, body []byte) reply {
	t.Helper()
	r, err := post(u, ct, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// post is do without *testing.T, for goroutines.
func post(u, ct string, body []byte) (reply, error) {
	resp, err := http.Post(u, ct, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	var r reply
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &r); err != nil {
		return reply{}, fmt.Errorf("%s answered non-JSON %q", u, data)
	}
	if !r.OK && r.ErrorCode != resp.StatusCode {
		return reply{}, fmt.Errorf("error_code %d but HTTP %d", r.ErrorCode, resp.StatusCode)
	}
	return r, nil
}

func TestTokenAndMethods(t *testing.T) {
	s := New(t, Options{})
	if r := do(t, s.URL()+"/bot1:wrong/getMe", "application/json", nil); r.ErrorCode != 401 || r.Description != "Unauthorized" {
		t.Errorf("wrong token: %+v", r)
	}
	if r := call(t, s, "noSuchMethod", nil); r.ErrorCode != 404 {
		t.Errorf("unknown method: %+v", r)
	}
	r := call(t, s, "getMe", nil)
	var me User
	if err := json.Unmarshal(r.Result, &me); err != nil || !me.IsBot || me.Username != "switchboard_bot" || me.ID != 123456789 {
		t.Errorf("getMe: %+v %v", me, err)
	}
}

func TestEncodingsDecodeAlike(t *testing.T) {
	s := New(t, Options{})
	s.AddChat(Chat{ID: 42, Type: "private"})
	base := s.URL() + "/bot" + s.Token() + "/sendMessage"

	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	_ = w.WriteField("chat_id", "42")
	_ = w.WriteField("text", "multipart")
	_ = w.WriteField("reply_parameters", `{"message_id":99,"allow_sending_without_reply":true}`)
	_ = w.Close()
	if r := do(t, base, w.FormDataContentType(), mp.Bytes()); !r.OK {
		t.Fatalf("multipart: %+v", r)
	}
	form := url.Values{"chat_id": {"42"}, "text": {"urlencoded"}}
	if r := do(t, base, "application/x-www-form-urlencoded", []byte(form.Encode())); !r.OK {
		t.Fatalf("urlencoded: %+v", r)
	}
	if r := call(t, s, "sendMessage", map[string]any{"chat_id": 42, "text": "json"}); !r.OK {
		t.Fatalf("json: %+v", r)
	}
	sent := s.Sent(42)
	if len(sent) != 3 || sent[0].Text != "multipart" || sent[1].Text != "urlencoded" || sent[2].Text != "json" {
		t.Fatalf("sent = %+v", sent)
	}
	reqs := s.Requests("sendMessage")
	if reqs[0].Fields["reply_parameters"] == "" || reqs[2].Fields["chat_id"] != "42" {
		t.Errorf("decoded fields: %v / %v", reqs[0].Fields, reqs[2].Fields)
	}
	// Reply to a message that does not exist: refused unless allowed.
	if r := call(t, s, "sendMessage", map[string]any{"chat_id": 42, "text": "x", "reply_parameters": map[string]any{"message_id": 99}}); r.OK || !strings.Contains(r.Description, "message to be replied not found") {
		t.Errorf("reply to missing message: %+v", r)
	}
}

func TestGetUpdatesOffsets(t *testing.T) {
	s := New(t, Options{})
	s.UserSays(42, "one")
	s.UserSays(42, "two")
	var ups []Update
	r := call(t, s, "getUpdates", map[string]any{"timeout": 0})
	if err := json.Unmarshal(r.Result, &ups); err != nil || len(ups) != 2 || ups[0].Message.Text != "one" {
		t.Fatalf("first poll: %s %v", r.Result, err)
	}
	// Offset past the first confirms it; the second is delivered again.
	r = call(t, s, "getUpdates", map[string]any{"offset": ups[0].UpdateID + 1})
	_ = json.Unmarshal(r.Result, &ups)
	if len(ups) != 1 || ups[0].Message.Text != "two" || !s.Confirmed(ups[0].UpdateID-1) || s.Deliveries(ups[0].UpdateID) != 2 {
		t.Fatalf("second poll: %s", r.Result)
	}
	next := ups[0].UpdateID + 1
	// Long poll: waits, and returns as soon as an update arrives.
	go func() {
		time.Sleep(20 * time.Millisecond)
		s.UserSays(42, "three")
	}()
	r = call(t, s, "getUpdates", map[string]any{"offset": next, "timeout": 10})
	_ = json.Unmarshal(r.Result, &ups)
	if len(ups) != 1 || ups[0].Message.Text != "three" || s.Pending() != 1 {
		t.Fatalf("long poll: %s pending %d", r.Result, s.Pending())
	}

	// A webhook excludes polling.
	if r := call(t, s, "setWebhook", map[string]any{"url": "https://example.com/hook", "secret_token": "abc"}); !r.OK {
		t.Fatalf("setWebhook: %+v", r)
	}
	if r := call(t, s, "getUpdates", nil); r.ErrorCode != 409 {
		t.Errorf("getUpdates with a webhook: %+v", r)
	}
	if r := call(t, s, "setWebhook", map[string]any{"url": "https://example.com/hook", "secret_token": "not allowed!"}); r.ErrorCode != 400 {
		t.Errorf("bad secret accepted: %+v", r)
	}
}

func TestConcurrentPollsConflict(t *testing.T) {
	s := New(t, Options{})
	first := make(chan reply, 1)
	go func() {
		r, err := post(s.URL()+"/bot"+s.Token()+"/getUpdates", "application/json", []byte(`{"timeout":10}`))
		if err != nil {
			r.Description = err.Error()
		}
		first <- r
	}()
	s.WaitRequests(t, "getUpdates", 1, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		body, _ := json.Marshal(map[string]any{"timeout": 10})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/bot"+s.Token()+"/getUpdates", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case r := <-first:
		if r.ErrorCode != 409 || !strings.Contains(r.Description, "terminated by other getUpdates request") {
			t.Errorf("older poll: %+v", r)
		}
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("older poll was not terminated")
	}
	if n := s.Conflicts(); n != 1 {
		t.Errorf("Conflicts() = %d, want 1", n)
	}
}

func TestHTMLParseMode(t *testing.T) {
	cases := []struct {
		in, plain, err string
	}{
		{in: "<b>bold</b> &amp; <i>it</i>", plain: "bold & it"},
		{in: `<pre><code class="language-go">a &lt; b</code></pre>`, plain: "a < b"},
		{in: `<a href="https://x.y/?a=1&amp;b=2">link</a>`, plain: "link"},
		{in: `<span class="tg-spoiler">s</span><tg-spoiler>t</tg-spoiler><blockquote expandable>q</blockquote>`, plain: "stq"},
		{in: "&#128512; &#x1F600; &unknown; & alone", plain: "😀 😀 &unknown; & alone"},
		{in: "<b>open", err: `Can't find end tag corresponding to start tag "b"`},
		{in: "<b><i>x</b></i>", err: `Unmatched end tag at byte offset 7, expected "</i>", found "</b>"`},
		{in: "<foo>x</foo>", err: `Unsupported start tag "foo" at byte offset 0`},
		{in: "a < b", err: "Unexpected end of name token at byte offset 2"},
		{in: "x</b>", err: "Unexpected end tag at byte offset 1"},
		{in: `<span>x</span>`, err: `Tag "span" must have class "tg-spoiler"`},
		{in: `<a href="x`, err: "Unclosed start tag"},
	}
	for _, tc := range cases {
		got, err := parseHTML(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseHTML(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.plain {
			t.Errorf("parseHTML(%q) = %q, %v; want %q", tc.in, got, err, tc.plain)
		}
	}

	s := New(t, Options{})
	s.AddChat(Chat{ID: 42, Type: "private"})
	if r := call(t, s, "sendMessage", map[string]any{"chat_id": 42, "text": "<b>x", "parse_mode": "HTML"}); r.ErrorCode != 400 || !strings.HasPrefix(r.Description, "Bad Request: can't parse entities: ") {
		t.Errorf("bad HTML: %+v", r)
	}
	if r := call(t, s, "sendMessage", map[string]any{"chat_id": 42, "text": strings.Repeat("😀", 2049)}); !strings.Contains(r.Description, "message is too long") {
		t.Errorf("4098 UTF-16 units accepted: %+v", r)
	}
}

func TestEditAndNotModified(t *testing.T) {
	s := New(t, Options{})
	s.AddChat(Chat{ID: 42, Type: "private"})
	r := call(t, s, "sendMessage", map[string]any{"chat_id": 42, "text": "draft"})
	var m Message
	_ = json.Unmarshal(r.Result, &m)
	if r := call(t, s, "editMessageText", map[string]any{"chat_id": 42, "message_id": m.MessageID, "text": "<b>final</b>", "parse_mode": "HTML"}); !r.OK {
		t.Fatalf("edit: %+v", r)
	}
	if r := call(t, s, "editMessageText", map[string]any{"chat_id": 42, "message_id": m.MessageID, "text": "<b>final</b>", "parse_mode": "HTML"}); !strings.Contains(r.Description, "message is not modified") {
		t.Errorf("same edit: %+v", r)
	}
	user := s.UserSays(42, "mine")
	if r := call(t, s, "editMessageText", map[string]any{"chat_id": 42, "message_id": user.MessageID, "text": "hijack"}); !strings.Contains(r.Description, "message can't be edited") {
		t.Errorf("edit of a user's message: %+v", r)
	}
	sent := s.Sent(42)
	if len(sent) != 1 || sent[0].Plain != "final" || sent[0].Edits != 1 {
		t.Errorf("sent = %+v", sent)
	}
}

func TestScriptedFailuresAndFiles(t *testing.T) {
	s := New(t, Options{})
	s.AddChat(Chat{ID: -7, Type: "group", Title: "G"})
	s.FailNext("sendMessage", 1, TooManyRequests(3))
	r := call(t, s, "sendMessage", map[string]any{"chat_id": -7, "text": "x"})
	if r.ErrorCode != 429 || r.Parameters.RetryAfter != 3 || r.Description != "Too Many Requests: retry after 3" {
		t.Errorf("429: %+v", r)
	}
	s.MigrateChat(-7, -1007)
	r = call(t, s, "sendMessage", map[string]any{"chat_id": -7, "text": "x"})
	if r.ErrorCode != 400 || r.Parameters.MigrateToChatID != -1007 {
		t.Errorf("migration: %+v", r)
	}
	if r := call(t, s, "sendMessage", map[string]any{"chat_id": -1007, "text": "x"}); !r.OK {
		t.Errorf("new supergroup: %+v", r)
	}

	f := s.AddFile([]byte("JPEGDATA"), "")
	r = call(t, s, "getFile", map[string]any{"file_id": f.FileID})
	var got File
	_ = json.Unmarshal(r.Result, &got)
	resp, err := http.Get(s.URL() + "/file/bot" + s.Token() + "/" + got.FilePath)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "JPEGDATA" {
		t.Errorf("download = %q", data)
	}
	if r := call(t, s, "getFile", map[string]any{"file_id": "nope"}); !strings.Contains(r.Description, "invalid file_id") {
		t.Errorf("bad file id: %+v", r)
	}
}

func TestDetectEntitiesUTF16(t *testing.T) {
	got := DetectEntities("👍 hi @some_user /cmd@a_bot_name x@nomention")
	want := []MessageEntity{{Type: "mention", Offset: 6, Length: 10}, {Type: "bot_command", Offset: 17, Length: 15}}
	if len(got) != len(want) {
		t.Fatalf("entities = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entity %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
