package whatsapp

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

// A media URL that redirects (to the daemon's own admin API on loopback,
// say) is not followed: nothing reaches the redirect's target, the token
// least of all, and the user is told the attachment could not be received.
func TestInboundMediaRedirectNotFollowed(t *testing.T) {
	var hits, tokens atomic.Int32
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "" {
			tokens.Add(1)
		}
		_, _ = io.WriteString(w, "admin secrets")
	}))
	defer admin.Close()
	fake, _, s, _ := running(t, fakewhatsapp.Options{MediaRedirect: admin.URL + "/ui/config"})
	fake.Send(ada, fake.Media(ada, "document", "application/pdf", []byte("%PDF"), "see", "a.pdf", false)).Wait(t, 20*time.Second)
	m := s.wait(t, 1)[0]
	if hits.Load() != 0 || tokens.Load() != 0 {
		t.Errorf("the redirect was followed: %d request(s) reached its target, %d with the access token", hits.Load(), tokens.Load())
	}
	if len(m.Media) != 0 || !strings.HasPrefix(m.Text, "see\n[the user sent a document that could not be received:") {
		t.Errorf("got media %d, text %q", len(m.Media), m.Text)
	}
}

// Webhook bodies an attacker or an odd proxy might send: only the exact
// bytes Meta signed, read within the cap, are taken.
func TestWebhookBodyEdges(t *testing.T) {
	fake, _, s, url := running(t, fakewhatsapp.Options{})
	valid := fake.Payload(ada, fake.Text(ada, "signed"))
	// A body of exactly the cap, signed: read whole (valid JSON padded
	// with spaces), its message handed on.
	padded := append(append([]byte(nil), valid...), bytes.Repeat([]byte(" "), maxWebhookBody-len(valid))...)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(valid)
	_ = zw.Close()
	upper := "sha256=" + strings.ToUpper(strings.TrimPrefix(fake.Sign(valid), "sha256="))
	cases := []struct {
		name    string
		body    []byte
		sigs    []string
		chunked bool
		gzip    bool
		want    int
	}{
		{"signature header twice, forged first", valid, []string{"sha256=" + strings.Repeat("00", 32), fake.Sign(valid)}, false, false, http.StatusUnauthorized},
		{"sha1 prefix with a valid hex mac", valid, []string{"sha1=" + strings.TrimPrefix(fake.Sign(valid), "sha256=")}, false, false, http.StatusUnauthorized},
		{"uppercase hex of the right mac", valid, []string{upper}, false, false, http.StatusOK},
		{"exactly the cap", padded, []string{fake.Sign(padded)}, false, false, http.StatusOK},
		{"cap plus one", append(padded, ' '), []string{fake.Sign(append(padded, ' '))}, false, false, http.StatusRequestEntityTooLarge},
		{"chunked cap plus one", append(padded, ' '), []string{fake.Sign(append(padded, ' '))}, true, false, http.StatusRequestEntityTooLarge},
		{"gzip body signed compressed", gz.Bytes(), []string{fake.Sign(gz.Bytes())}, false, true, http.StatusOK},
		{"gzip header, signature of the plain body", gz.Bytes(), []string{fake.Sign(valid)}, false, true, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			req, err := http.NewRequest(http.MethodPost, url, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			for _, sig := range tc.sigs {
				req.Header.Add("X-Hub-Signature-256", sig)
			}
			if tc.gzip {
				req.Header.Set("Content-Encoding", "gzip")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	// The uppercase and exact-cap deliveries carry the same wamid: the
	// adapter hands both on (dedup is the hub's); the gzip one is not JSON
	// and is dropped. Nothing else got through.
	fake.UserSays(t, ada, "after")
	msgs := s.wait(t, 3)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if got := strings.Join(texts, "|"); got != "signed|signed|after" {
		t.Errorf("handed on %q, want signed|signed|after", got)
	}
}
