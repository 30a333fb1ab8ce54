package email

import (
	"strings"
	"testing"
)

// FuzzHeader feeds outside input — a mail's header fields — through every
// parser that reads it: none may panic, and a verdict of trust needs the
// configured authserv-id in the input.
func FuzzHeader(f *testing.F) {
	f.Add("Authentication-Results: mx.example.com; dmarc=pass header.from=example.org\r\nFrom: <a@example.org>\r\n")
	f.Add("Authentication-Results: (c;(x)) mx.example.com 1; dkim = pass (ok) header.i=\"@example.org\"; none\r\nReferences: <a@b> <c d> <\r\n")
	f.Add("Auto-Submitted: no (x)\r\nReturn-Path: <>\r\nContent-Type: multipart/report; x\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		h, err := parseHeader([]byte(raw))
		if err != nil {
			return
		}
		_ = automatic(h, "a@example.org")
		ok, _ := authenticated(h, "mx.example.com", "a@example.org")
		if ok && !strings.Contains(strings.ToLower(raw), "mx.example.com") {
			t.Errorf("trusted without the authserv-id in the input: %q", raw)
		}
		for _, id := range ids(h.Get("References")) {
			if strings.ContainsAny(id, " \r\n<>") {
				t.Errorf("id %q", id)
			}
			if tid := threadID(id); strings.ContainsAny(tid, " \t\r\n") {
				t.Errorf("thread id %q", tid)
			}
		}
		_ = stripQuoted(h.Get("Subject"))
		_ = htmlText(h.Get("Subject"))
		_ = decodeWords(h.Get("Subject"))
	})
}

// TestAuthResults: the parts of RFC 8601 a forger could play with.
func TestAuthResults(t *testing.T) {
	tests := []struct {
		name, ar, from string
		ok             bool
	}{
		{"dmarc pass", "mx.example.com; dmarc=pass header.from=example.org", "a@example.org", true},
		{"version and spaces", "MX.example.com 1 ; dmarc = pass (p=none) header.from=EXAMPLE.org", "a@example.org", true},
		{"pass only in a comment", "mx.example.com; dmarc=fail (dmarc=pass would be nice)", "a@example.org", false},
		{"id in a comment", "(mx.example.com) evil.example.net; dmarc=pass", "a@example.org", false},
		{"id as a prefix", "mx.example.com.evil.net; dmarc=pass", "a@example.org", false},
		{"quoted semicolon", `mx.example.com; dkim=fail reason="a; dmarc=pass"`, "a@example.org", false},
		{"dkim aligned subdomain", "mx.example.com; dkim=pass header.d=example.org", "a@mail.example.org", true},
		{"dkim of a TLD", "mx.example.com; dkim=pass header.d=org", "a@example.org", false},
		{"dkim neutral", "mx.example.com; dkim=neutral header.d=example.org", "a@example.org", false},
		{"none", "mx.example.com; none", "a@example.org", false},
	}
	for _, tc := range tests {
		h, err := parseHeader([]byte("Authentication-Results: " + tc.ar + "\r\n\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		if ok, why := authenticated(h, "mx.example.com", tc.from); ok != tc.ok {
			t.Errorf("%s: %q trusted=%v (%s), want %v", tc.name, tc.ar, ok, why, tc.ok)
		}
	}
}

// TestStripQuoted: the quoted earlier mail and the signature are cut, the
// user's own words kept.
func TestStripQuoted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"yes\n\nOn Mon, 1 Jan 2026, Bot <bot@example.com> wrote:\n> question?\n>\n> more\n", "yes"},
		{"> I said\nand I answer inline\n> more", "> I said\nand I answer inline"},
		{"thanks\n-- \nAda Lovelace\nAnalytical Engines Ltd", "thanks"},
		{"see below\n\n-----Original Message-----\nFrom: bot", "see below"},
		{"a list:\n- one\n- two", "a list:\n- one\n- two"},
	}
	for _, tc := range tests {
		if got := stripQuoted(tc.in); got != tc.want {
			t.Errorf("stripQuoted(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
