package loadtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTokensInFindsWhatTheRegexpFinds: the hand-written scanner returns the
// distinct matches of tokenRE, in order, in the bodies the daemon sends.
func TestTokensInFindsWhatTheRegexpFinds(t *testing.T) {
	for _, body := range []string{
		``,
		`{"content":"echo: q1x2z"}`,
		`chat_id=500001&text=echo%3A+q12x0z+and+q12x0z+again`,
		`{"text":"q1x2z q3x4z q1x2z"}`,
		`qq1x2zz q1x2 x3z q1xz qx1z q1x2zq3x4z`,
		`q`, `q1`, `q1x`, `q1x2`, `q99999999999x0z`,
	} {
		var want []string
		for _, m := range tokenRE.FindAllString(body, -1) {
			if !slices.Contains(want, m) {
				want = append(want, m)
			}
		}
		if got := tokensIn([]byte(body)); !slices.Equal(got, want) {
			t.Errorf("tokensIn(%q) = %q, want %q", body, got, want)
		}
	}
}

// TestMessageIDsOfCreateAnswers: the id the tap counts distinct messages by
// is read from each platform's answer to a create call.
func TestMessageIDsOfCreateAnswers(t *testing.T) {
	for _, c := range []struct {
		name string
		idOf func([]byte) string
		body string
		want string
	}{
		{"telegram", telegramID, `{"ok":true,"result":{"message_id":17,"from":{"id":7000000001},"chat":{"id":500001}}}`, "17"},
		{"telegram spaced", telegramID, `{"ok":true,"result":{"message_id": 42}}`, "42"},
		{"telegram error", telegramID, `{"ok":false,"error_code":400}`, ""},
		{"discord", discordID, `{"id":"1300000000000000001","type":0,"author":{"id":"100000000000000001"}}`, "1300000000000000001"},
		{"discord spaced", discordID, " {\n  \"id\": \"1234\"}", "1234"},
		{"discord not first", discordID, `{"type":0,"id":"1234"}`, ""},
		{"slack", slackID, `{"channel":"DU0000001","message":{"text":"x","ts":"1700000000.000007"},"ok":true,"ts":"1700000000.000007"}`, "1700000000.000007"},
		{"slack unterminated", slackID, `{"ts":"17000`, ""},
		{"slack none", slackID, `{"ok":false,"error":"ratelimited"}`, ""},
	} {
		if got := c.idOf([]byte(c.body)); got != c.want {
			t.Errorf("%s: id of %s = %q, want %q", c.name, c.body, got, c.want)
		}
	}
}

// TestDropLongPollsBreaksTheConnection: a dropped getUpdates call ends with
// a broken connection, not an answer, and other calls are untouched.
func TestDropLongPollsBreaksTheConnection(t *testing.T) {
	tap := newTap(telegramSend, telegramID)
	srv := httptest.NewServer(tap.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/getUpdates") {
			select { // a long poll with nothing to deliver
			case <-r.Context().Done():
			case <-time.After(2 * time.Minute): // beyond the waits below: an answer means the drop failed
			}
		}
		_, _ = io.WriteString(w, `{"ok":true,"result":[]}`)
	})))
	defer srv.Close()

	done := make(chan error, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/bottok/getUpdates", "application/json", strings.NewReader(`{"timeout":10}`))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(time.Minute) // a hang detector
	for tap.DropLongPolls() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the long poll never reached the tap")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("a dropped long poll was answered")
		}
	case <-time.After(time.Minute): // a hang detector
		t.Fatal("a dropped long poll kept running")
	}
	resp, err := http.Post(srv.URL+"/bottok/getMe", "application/json", nil)
	if err != nil {
		t.Fatalf("a call after the drop: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"ok":true`) {
		t.Errorf("a call after the drop: %d %s", resp.StatusCode, body)
	}
}
