package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedactText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"no url here", "no url here"},
		{`Post "http://127.0.0.1:9/v1/chat/completions?api-key=SECRET": dial tcp 127.0.0.1:9: connect: connection refused`,
			`Post "http://127.0.0.1:9/v1/chat/completions?api-key=[redacted]": dial tcp 127.0.0.1:9: connect: connection refused`},
		{"get https://user:SECRET@h.example/x failed; retry https://h.example/y?token=SECRET&page=2",
			"get https://user:[redacted]@h.example/x failed; retry https://h.example/y?token=[redacted]&page=2"},
		{"see (https://h.example/v1?key=SECRET)", "see (https://h.example/v1?key=[redacted])"},
		{"plain http://h.example/v1 stays", "plain http://h.example/v1 stays"},
		{"wss://gw.example/?v=10&encoding=json", "wss://gw.example/?v=10&encoding=json"},
		{`dial "wss://wss-primary.slack.com/link/?ticket=SECRET&app_id=A1": EOF`, `dial "wss://wss-primary.slack.com/link/?ticket=[redacted]&app_id=A1": EOF`},
	}
	for _, c := range cases {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestRedactErrorKeepsChain(t *testing.T) {
	if Error(nil) != nil {
		t.Fatal("Error(nil) != nil")
	}
	plain := errors.New("nothing to hide")
	if Error(plain) != plain {
		t.Fatal("an error without a secret was wrapped")
	}
	uerr := &url.Error{Op: "Post", URL: "http://h.example/v1/chat/completions?api-key=SECRET", Err: errors.New("connection refused")}
	err := Error(fmt.Errorf("model call: %w", uerr))
	if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "api-key=[redacted]") {
		t.Fatalf("text not redacted: %q", err)
	}
	var got *url.Error
	if !errors.As(err, &got) || got != uerr {
		t.Fatal("errors.As no longer finds the *url.Error")
	}
}

// Error hides the secrets it is given beside the URLs in an error's text,
// and the original error stays reachable.
func TestErrorHidesSecrets(t *testing.T) {
	base := errors.New(`connect: password authentication failed for "hunter2-pw" at postgres://u:hunter2-pw@db/x`)
	err := Error(fmt.Errorf("open: %w", base), "hunter2-pw", "")
	if strings.Contains(err.Error(), "hunter2-pw") {
		t.Fatalf("the secret is in %q", err)
	}
	if !errors.Is(err, base) {
		t.Fatal("errors.Is lost the wrapped error")
	}
	plain := errors.New("nothing to hide")
	if Error(plain, "hunter2-pw") != plain {
		t.Fatal("an error with nothing to hide was wrapped")
	}
}
