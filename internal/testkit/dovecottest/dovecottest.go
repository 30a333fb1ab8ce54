// Package dovecottest runs a real IMAP server for tests: Debian's dovecot
// (package dovecot-imapd, /usr/sbin/dovecot) with a minimal configuration
// written into a fresh temporary directory — listening on 127.0.0.1 on a free
// port, users from a passwd-file, maildir mail in the directory, no chroot,
// plain text or, with Options.ImplicitTLS, imaps:// with a self-signed
// certificate, logging to a file there. The server is the child
// of the test process (foreground mode, a parent-death signal), and the
// test's cleanup stops it, reaps it and removes the directory.
//
// Tests deliver mail the way an MTA's delivery agent files it: IMAP APPEND
// into the user's mailbox (Append). The adapter under test reaches dovecot
// through a TCP relay owned by the Server, so DropConnections can cut every
// client connection abruptly, as a network failure does.
//
// When run as root (CI is), dovecot's mail processes may not run as uid 0,
// so they run as the `dovecot` user the Debian package creates, which is
// given the mail directory; otherwise everything runs as the current user.
// Without the binary, Start skips the test, naming the package to install.
package dovecottest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// Binary is where Debian's dovecot-imapd installs the server.
const Binary = "/usr/sbin/dovecot"

// startTimeout bounds the server's start.
const startTimeout = 30 * time.Second

// User is a mail account of the server.
type User struct {
	Name, Password string
}

// Server is one running dovecot.
type Server struct {
	opts   Options
	pool   *x509.CertPool
	cert   *x509.Certificate
	dir    string
	real   string // dovecot's own listener
	relay  net.Listener
	cmd    *exec.Cmd
	exited chan error // Wait's result
	users  map[string]string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Options configures the server.
type Options struct {
	// ImplicitTLS serves imaps:// (TLS from the first byte) with a
	// self-signed certificate for 127.0.0.1 that CertPool trusts, instead
	// of plain imap://.
	ImplicitTLS bool
}

// Start runs a plain-text dovecot with users until the test ends; it skips
// the test when dovecot is not installed.
func Start(t testing.TB, users ...User) *Server {
	t.Helper()
	return StartWith(t, Options{}, users...)
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options, users ...User) *Server {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("dovecot is not installed (%s): apt-get install dovecot-imapd to run the IMAP tests", Binary)
	}
	s := &Server{opts: opts, users: map[string]string{}, conns: map[net.Conn]struct{}{}}
	for _, u := range users {
		s.users[u.Name] = u.Password
	}
	dir, err := os.MkdirTemp("", "dovecottest-")
	if err != nil {
		t.Fatalf("dovecottest: %v", err)
	}
	s.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if opts.ImplicitTLS {
		cert, err := testkit.SelfSigned()
		if err != nil {
			t.Fatalf("dovecottest: %v", err)
		}
		s.pool, s.cert = cert.Pool, cert.TLS.Leaf
		if err := os.WriteFile(filepath.Join(dir, "cert.pem"), cert.CertPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "key.pem"), cert.KeyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var lastErr error
	for range 3 { // a free port may be taken between choosing and binding it
		if lastErr = s.start(t); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("dovecottest: %v\n%s", lastErr, s.Log())
	}
	relay, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dovecottest: relay: %v", err)
	}
	s.relay = relay
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.stop)
	return s
}

// Addr is the host:port clients connect to (the relay in front of dovecot).
func (s *Server) Addr() string { return s.relay.Addr().String() }

// URL is the server as channels.email.imap.url names it.
func (s *Server) URL() string {
	if s.opts.ImplicitTLS {
		return "imaps://" + s.Addr()
	}
	return "imap://" + s.Addr()
}

// Certificate is the server's certificate (ImplicitTLS).
func (s *Server) Certificate() *x509.Certificate { return s.cert }

// CertPool trusts the server's certificate (ImplicitTLS).
func (s *Server) CertPool() *x509.CertPool { return s.pool }

// dial connects a client straight to dovecot (not through the relay).
func (s *Server) dial() (*imapclient.Client, error) {
	if s.opts.ImplicitTLS {
		return imapclient.DialTLS(s.real, &imapclient.Options{TLSConfig: &tls.Config{RootCAs: s.pool}})
	}
	return imapclient.DialInsecure(s.real, nil)
}

// Dir is the server's directory (configuration, mail, log).
func (s *Server) Dir() string { return s.dir }

// Log returns dovecot's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "dovecot.log"))
	return string(b)
}

// DropConnections cuts every client connection open now, without a word
// to either side, as a network failure does. dovecot itself keeps running.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
}

// Client is a client logged in as user, straight to dovecot (not through
// the relay), closed when the test ends: for what a test does to a mailbox
// besides delivering (CREATE, DELETE, STORE).
func (s *Server) Client(t testing.TB, userName string) *imapclient.Client {
	t.Helper()
	c, err := s.dial()
	if err != nil {
		t.Fatalf("dovecottest: dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Login(userName, s.users[userName]).Wait(); err != nil {
		t.Fatalf("dovecottest: login %s: %v", userName, err)
	}
	return c
}

// Append files raw (a whole RFC 5322 message, CRLF line ends) into user's
// mailbox, as a delivery agent does, and returns its UID.
func (s *Server) Append(t testing.TB, userName, mailbox string, raw []byte) imap.UID {
	t.Helper()
	c, err := s.dial()
	if err != nil {
		t.Fatalf("dovecottest: dial: %v", err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Login(userName, s.users[userName]).Wait(); err != nil {
		t.Fatalf("dovecottest: login %s: %v", userName, err)
	}
	raw = crlf(raw)
	cmd := c.Append(mailbox, int64(len(raw)), nil)
	if _, err := cmd.Write(raw); err != nil {
		t.Fatalf("dovecottest: append: %v", err)
	}
	if err := cmd.Close(); err != nil {
		t.Fatalf("dovecottest: append: %v", err)
	}
	data, err := cmd.Wait()
	if err != nil {
		t.Fatalf("dovecottest: append to %s of %s: %v", mailbox, userName, err)
	}
	_ = c.Logout().Wait()
	return data.UID
}

// crlf turns bare LF line ends into CRLF, as IMAP wants them.
func crlf(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
}

func (s *Server) start(t testing.TB) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s.real = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	uid, gid, internal, login, err := identities()
	if err != nil {
		return err
	}
	mail := filepath.Join(s.dir, "mail")
	for _, d := range []string{mail, filepath.Join(s.dir, "run"), filepath.Join(s.dir, "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// The mail processes run as uid: they must reach and own the mail.
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	if err := os.Chown(mail, uid, gid); err != nil {
		return err
	}
	var pw strings.Builder
	for name, pass := range s.users {
		fmt.Fprintf(&pw, "%s:{PLAIN}%s::::::\n", name, pass)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "passwd"), []byte(pw.String()), 0o644); err != nil {
		return err
	}
	tmpl := configTemplate
	if s.opts.ImplicitTLS {
		tmpl = tlsConfigTemplate
	}
	conf := fmt.Sprintf(tmpl, s.dir, uid, gid, internal, login, port)
	confPath := filepath.Join(s.dir, "dovecot.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(Binary, "-F", "-c", confPath)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start dovecot: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for {
		if s.greeted() {
			s.cmd, s.exited = cmd, exited // stop reaps it
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("dovecot exited at start: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return fmt.Errorf("dovecot did not answer on %s within %s", s.real, startTimeout)
		}
	}
}

// greeted reports whether dovecot greets.
func (s *Server) greeted() bool {
	var c net.Conn
	var err error
	if s.opts.ImplicitTLS {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", s.real, &tls.Config{RootCAs: s.pool})
	} else {
		c, err = net.DialTimeout("tcp", s.real, time.Second)
	}
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	var got []byte
	for !bytes.Contains(got, []byte("\n")) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return false
		}
	}
	return bytes.HasPrefix(got, []byte("* OK"))
}

// identities returns the uid and gid dovecot's mail processes run as and
// the users of its internal and login processes.
func identities() (uid, gid int, internal, login string, err error) {
	if os.Getuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return 0, 0, "", "", err
		}
		return os.Getuid(), os.Getgid(), u.Username, u.Username, nil
	}
	u, err := user.Lookup("dovecot")
	if err != nil {
		return 0, 0, "", "", fmt.Errorf("running as root needs the dovecot user of the dovecot-core package: %w", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	login = "dovenull"
	if _, err := user.Lookup(login); err != nil {
		login = "dovecot"
	}
	return uid, gid, "dovecot", login, nil
}

// configTemplate: dir, mail uid, mail gid, internal user, login user, port.
const configTemplate = `# written by internal/testkit/dovecottest
base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
info_log_path = %[1]s/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
first_valid_uid = 1
mail_uid = %[2]d
mail_gid = %[3]d
mail_location = maildir:%[1]s/mail/%%u
default_internal_user = %[4]s
default_login_user = %[5]s
passdb {
  driver = passwd-file
  args = %[1]s/passwd
}
userdb {
  driver = static
  args = home=%[1]s/mail/%%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[6]d
  }
  inet_listener imaps {
    port = 0
  }
}
`

// tlsConfigTemplate is configTemplate serving imaps:// only.
var tlsConfigTemplate = strings.NewReplacer(
	"ssl = no\n", "ssl = required\nssl_cert = <%[1]s/cert.pem\nssl_key = <%[1]s/key.pem\n",
	"  inet_listener imap {\n    address = 127.0.0.1\n    port = %[6]d\n  }\n  inet_listener imaps {\n    port = 0\n  }\n",
	"  inet_listener imap {\n    port = 0\n  }\n  inet_listener imaps {\n    address = 127.0.0.1\n    port = %[6]d\n  }\n",
).Replace(configTemplate)

// accept relays each client connection to dovecot.
func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.relay.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", s.real)
		if err != nil {
			_ = c.Close()
			continue
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.conns[up] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(2)
		go s.pipe(c, up)
		go s.pipe(up, c)
	}
}

func (s *Server) pipe(dst, src net.Conn) {
	defer s.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	s.mu.Lock()
	delete(s.conns, dst)
	delete(s.conns, src)
	s.mu.Unlock()
}

// stop closes the relay and its connections, stops dovecot and reaps it.
func (s *Server) stop() {
	_ = s.relay.Close()
	s.DropConnections()
	s.wg.Wait()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}
