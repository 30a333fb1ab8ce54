package dovecottest

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2/imapclient"
)

// A message appended to a user's INBOX is there for that user's client.
func TestAppendAndRead(t *testing.T) {
	s := Start(t, User{Name: "bot", Password: "secret"})
	uid := s.Append(t, "bot", "INBOX", []byte("From: a@example.com\nTo: bot@example.com\nSubject: hi\n\nhello\n"))
	if uid == 0 {
		t.Fatal("Append returned UID 0")
	}
	c, err := imapclient.DialInsecure(s.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Login("bot", "secret").Wait(); err != nil {
		t.Fatal(err)
	}
	sel, err := c.Select("INBOX", nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	if sel.NumMessages != 1 || sel.UIDNext != uid+1 {
		t.Errorf("INBOX has %d messages, UIDNEXT %d; want 1 and %d", sel.NumMessages, sel.UIDNext, uid+1)
	}
	if err := c.Login("bot", "wrong").Wait(); err == nil {
		t.Error("a second LOGIN in the authenticated state succeeded")
	}
	s.DropConnections()
	select {
	case <-c.Closed():
	case <-t.Context().Done():
	}
}

// With ImplicitTLS the server speaks imaps:// with a certificate CertPool
// trusts.
func TestImplicitTLS(t *testing.T) {
	s := StartWith(t, Options{ImplicitTLS: true}, User{Name: "bot", Password: "secret"})
	if !strings.HasPrefix(s.URL(), "imaps://") {
		t.Fatalf("URL %s", s.URL())
	}
	s.Append(t, "bot", "INBOX", []byte("From: a@example.com\n\nhi\n"))
	c, err := imapclient.DialTLS(s.Addr(), &imapclient.Options{TLSConfig: &tls.Config{RootCAs: s.CertPool()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Login("bot", "secret").Wait(); err != nil {
		t.Fatal(err)
	}
}
