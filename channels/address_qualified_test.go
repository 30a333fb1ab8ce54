package channels

import "testing"

// Server-qualified chat ids ("!local:server[:port]", the federated form)
// hold ':' themselves: the address of such a chat, and of a thread in it,
// parses back to the same chat and thread, and passes CheckTarget.
func TestServerQualifiedTargets(t *testing.T) {
	tests := []struct {
		addr, chat, thread string
	}{
		{"matrix:!abc:server.org", "!abc:server.org", ""},
		{"matrix:!abc:server.org:$eventid", "!abc:server.org", "$eventid"},
		{"matrix:!abc:server.org:8448", "!abc:server.org:8448", ""},
		{"matrix:!abc:server.org:8448:$ev+/x", "!abc:server.org:8448", "$ev+/x"},
		{"matrix:!abc:[::1]:8448:$ev", "!abc:[::1]:8448", "$ev"},
		{"matrix:!abc:[::1]", "!abc:[::1]", ""},
		{"matrix:!abc:server.org:$old:server.org", "!abc:server.org", "$old:server.org"},
		// Other chat ids end at the first ':' as before.
		{"slack:C0123:1700000000.000100", "C0123", "1700000000.000100"},
		{"telegram:-100123:7", "-100123", "7"},
		{"email:ops@example.com", "ops@example.com", ""},
	}
	for _, tc := range tests {
		got, ok := ParseTarget(tc.addr)
		if !ok || got.ChatID != tc.chat || got.ThreadID != tc.thread {
			t.Errorf("ParseTarget(%q) = %+v, %v; want chat %q thread %q", tc.addr, got, ok, tc.chat, tc.thread)
			continue
		}
		if got.String() != tc.addr {
			t.Errorf("ParseTarget(%q).String() = %q: the session key does not round-trip", tc.addr, got.String())
		}
		if err := CheckTarget(tc.addr, nil); err != nil {
			t.Errorf("CheckTarget(%q): %v", tc.addr, err)
		}
	}
	for _, bad := range []string{"matrix:!abc:server.org:", "matrix:", "matrix:user:@a:b"} {
		if _, ok := ParseTarget(bad); ok {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
		if CheckTarget(bad, nil) == nil {
			t.Errorf("CheckTarget(%q) accepted", bad)
		}
	}
	if err := CheckUserID("matrix:user:@alice:server.org", []string{"matrix"}); err != nil {
		t.Errorf("CheckUserID of a server-qualified user id: %v", err)
	}
}

// Whatever ParseTarget accepts renders back to the same address (the
// session key), server-qualified chat ids included.
func FuzzParseTargetRoundTrip(f *testing.F) {
	for _, s := range []string{"matrix:!abc:server.org:$ev", "slack:C1:17.1", "m:!a:[::1]:80:t", "x:!a", "x:!a:b:", "t:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, ok := ParseTarget(s)
		if ok && tg.String() != s {
			t.Errorf("ParseTarget(%q) = %+v renders as %q", s, tg, tg.String())
		}
	})
}
