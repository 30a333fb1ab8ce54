package tools

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// The search client's connect-time check: whatever URL reaches the dialer,
// it connects only to the configured endpoint's host and port (a loopback
// SearXNG is the operator's choice); any other address is refused at
// connect, before a byte is sent.
func TestWebSearchDialsOnlyConfiguredEndpoint(t *testing.T) {
	backend, internal, _ := hostileBackend(t, func(in *site, _ *http.Request) string { return in.URL })
	s, err := NewWebSearch(WebSearchConfig{Provider: ProviderSearXNG, URL: backend.URL})
	if err != nil {
		t.Fatal(err)
	}
	bu, _ := url.Parse(backend.URL)
	iu, _ := url.Parse(internal.URL)
	conn, err := s.client.dial(context.Background(), "tcp", bu.Host)
	if err != nil {
		t.Fatalf("dialing the configured endpoint %s: %v", bu.Host, err)
	}
	conn.Close()
	for _, addr := range []string{iu.Host, "localhost:" + iu.Port(), "169.254.169.254:80", "[::1]:" + bu.Port()} {
		conn, err := s.client.dial(context.Background(), "tcp", addr)
		if err == nil {
			conn.Close()
			t.Errorf("dial(%s) connected, want refused", addr)
			continue
		}
		if want := "refusing to connect to " + addr + ": web_search connects only to its configured endpoint " + backend.URL; err.Error() != want {
			t.Errorf("dial(%s) = %v, want %q", addr, err, want)
		}
	}
	if n := len(internal.requests()); n != 0 {
		t.Fatalf("the internal service got %d requests", n)
	}
}
