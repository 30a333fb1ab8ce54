// Package fakesmtp is a mail submission server for tests: a real SMTP
// server (github.com/emersion/go-smtp's server side) on 127.0.0.1 that
// requires AUTH PLAIN with the configured credentials (plain text, loopback
// only) and records every message it accepted — envelope, raw data, headers
// and its text and HTML parts — so a test can assert on what a recipient
// would see. With ImplicitTLS it speaks smtps:// (a self-signed
// certificate the test trusts through CertPool). It can answer the next messages with an SMTP error, or take a
// message and drop the connection before answering (the window in which a
// client cannot know whether its message went out).
package fakesmtp

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// Options configures the server.
type Options struct {
	Username, Password string // AUTH PLAIN credentials; required
	MaxMessageBytes    int64  // SIZE limit; default 30 MiB
	// ImplicitTLS serves TLS from the first byte (smtps://) with a
	// self-signed certificate for 127.0.0.1 that CertPool trusts.
	ImplicitTLS bool
}

// Message is one message the server accepted.
type Message struct {
	AuthUser string
	From     string   // MAIL FROM
	To       []string // RCPT TO
	Data     []byte   // as received
	Header   mail.Header
	Text     string // the text/plain part, decoded, with LF line ends
	HTML     string // the text/html part, decoded, with LF line ends
}

// Server is a running fake.
type Server struct {
	opts Options
	srv  *smtp.Server
	ln   net.Listener
	pool *x509.CertPool
	cert *x509.Certificate

	mu      sync.Mutex
	msgs    []Message
	changed chan struct{}
	fail    []*smtp.SMTPError // answers for the next DATA commands
	drop    int               // the next messages are taken, then the connection drops
	auths   int
}

// Start runs a server until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = 30 << 20
	}
	s := &Server{opts: opts, changed: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fakesmtp: %v", err)
	}
	if opts.ImplicitTLS {
		cert, err := testkit.SelfSigned()
		if err != nil {
			t.Fatalf("fakesmtp: %v", err)
		}
		s.pool, s.cert = cert.Pool, cert.TLS.Leaf
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12})
	}
	s.ln = ln
	s.srv = smtp.NewServer(smtp.BackendFunc(s.newSession))
	s.srv.Domain = "fakesmtp.test"
	s.srv.AllowInsecureAuth = true
	s.srv.MaxMessageBytes = opts.MaxMessageBytes
	s.srv.MaxRecipients = 50
	s.srv.ReadTimeout = time.Minute
	s.srv.WriteTimeout = time.Minute
	s.srv.ErrorLog = testLog{t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = s.srv.Close()
		// Close misses a listener Serve has not registered yet (a test that
		// ends at once): closing it here makes Serve return either way.
		_ = ln.Close()
		<-done
	})
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the server as channels.email.smtp.url names it.
func (s *Server) URL() string {
	if s.opts.ImplicitTLS {
		return "smtps://" + s.Addr()
	}
	return "smtp://" + s.Addr()
}

// Certificate is the server's certificate (ImplicitTLS).
func (s *Server) Certificate() *x509.Certificate { return s.cert }

// CertPool trusts the server's certificate (ImplicitTLS).
func (s *Server) CertPool() *x509.CertPool { return s.pool }

// Messages returns the accepted messages, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Auths counts successful AUTH commands.
func (s *Server) Auths() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auths
}

// FailNext answers the next n messages' DATA with code (e.g. 451 or 554)
// and message, accepting nothing.
func (s *Server) FailNext(n, code int, enhanced smtp.EnhancedCode, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fail = append(s.fail, &smtp.SMTPError{Code: code, EnhancedCode: enhanced, Message: msg})
	}
}

// DropAfterNext makes the server take the next n messages (they count as
// sent) and cut the connection instead of answering the end of DATA.
func (s *Server) DropAfterNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop += n
}

// WaitFor waits until cond holds, re-checking at each accepted message.
func (s *Server) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, timeout, 20*time.Millisecond, what, func() (bool, <-chan struct{}) {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		return cond(), ch
	})
}

// testLog sends the server's error log to the test's log.
type testLog struct{ t testing.TB }

func (l testLog) Printf(format string, v ...any) { l.t.Logf("fakesmtp: "+format, v...) }
func (l testLog) Println(v ...any)               { l.t.Log(append([]any{"fakesmtp:"}, v...)...) }

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: s, conn: c}, nil
}

type session struct {
	s    *Server
	conn *smtp.Conn
	user string
	from string
	to   []string
}

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return smtp.ErrAuthFailed
		}
		ss.user = username
		ss.s.mu.Lock()
		ss.s.auths++
		ss.s.mu.Unlock()
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := ss.s
	s.mu.Lock()
	if len(s.fail) > 0 {
		e := s.fail[0]
		s.fail = s.fail[1:]
		s.mu.Unlock()
		return e
	}
	drop := s.drop > 0
	if drop {
		s.drop--
	}
	m := Message{AuthUser: ss.user, From: ss.from, To: append([]string(nil), ss.to...), Data: data}
	m.Header, m.Text, m.HTML = parse(data)
	s.msgs = append(s.msgs, m)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if drop {
		_ = ss.conn.Conn().Close()
		return errors.New("fakesmtp: connection dropped after DATA")
	}
	return nil
}

func (ss *session) Reset() { ss.from, ss.to = "", nil }

func (ss *session) Logout() error { return nil }

// parse reads a message's header and its text and HTML parts.
func parse(data []byte) (mail.Header, string, string) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return mail.Header{}, "", ""
	}
	var text, html string
	var walk func(ct, cte string, body io.Reader)
	walk = func(ct, cte string, body io.Reader) {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil {
			mt = "text/plain"
		}
		if strings.HasPrefix(mt, "multipart/") {
			mr := multipart.NewReader(body, params["boundary"])
			for {
				p, err := mr.NextRawPart()
				if err != nil {
					return
				}
				walk(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p)
			}
		}
		b, _ := io.ReadAll(decode(cte, body))
		b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
		switch {
		case mt == "text/plain" && text == "":
			text = string(b)
		case mt == "text/html" && html == "":
			html = string(b)
		}
	}
	walk(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	return msg.Header, text, html
}

func decode(cte string, r io.Reader) io.Reader {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "quoted-printable":
		return quotedprintable.NewReader(r)
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, r)
	}
	return r
}
