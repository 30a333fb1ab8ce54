package main

// Before the CLI sends the daemon its admin token, whatever answers at
// server.listen proves that it is the daemon (internal/daemon/hello.go):
// while the daemon is down, any local program could listen on that port and
// be sent the token. Every connection the admin client opens is checked
// before it carries a request: a random nonce goes to daemon.HelloPath, and
// the answer must be the HMAC only the holder of <data_dir>/admin.token can
// compute. A connection that fails is closed, and the command says what
// answers there instead of the daemon; no token was sent.
//
// The check needs the local token, re-read for every connection (a
// rotation takes effect when the daemon restarts, also for a `switchboard
// chat` that stays open). A CLI that cannot read admin.token (run as another
// user, or with another data directory) cannot check: it sends
// server.admin_token to an address on another host as before, and to one on
// this machine not at all (a program there may have taken the port), and
// says so when the daemon wants it (remote.go).

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// helloTimeout bounds the proof exchange on a new connection.
const helloTimeout = 10 * time.Second

// notTheDaemonError: something answers at the admin address but could not
// prove it is the daemon.
type notTheDaemonError struct {
	addr   string
	reason string
}

func (e *notTheDaemonError) Error() string {
	return fmt.Sprintf("something answers at %s, but it is not this daemon: %s; the admin token was not sent to it "+
		"(another program may be listening on server.listen, or the daemon uses another data directory)", e.addr, e.reason)
}

// maxHelloAnswer bounds what is read of the answer to the proof request.
const maxHelloAnswer = 16 << 10

// verifiedTransport is an HTTP transport whose connections have each proven
// they reach the daemon that holds local() (the local admin token, read
// when the connection is made).
func verifiedTransport(local func() string) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the admin API is reached directly, never through HTTP_PROXY
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := proveDaemon(ctx, conn, addr, local()); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	return tr
}

// proveDaemon asks the peer of conn for the proof of a fresh nonce and
// checks it; conn is left ready for the next request.
func proveDaemon(ctx context.Context, conn net.Conn, addr, local string) error {
	if local == "" { // anyone can compute a proof keyed with nothing
		return &notTheDaemonError{addr: addr, reason: "the admin token to check it with is gone from the data directory"}
	}
	nonce := make([]byte, daemon.HelloNonceLen)
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("make a nonce: %w", err)
	}
	deadline := time.Now().Add(helloTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	form := url.Values{"nonce": {hex.EncodeToString(nonce)}}.Encode()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+daemon.HelloPath, strings.NewReader(form))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := req.Write(conn); err != nil {
		return fmt.Errorf("ask %s to prove it is the daemon: %w", addr, err)
	}
	// Bounded: a program on the port could send an endless header.
	resp, err := http.ReadResponse(bufio.NewReaderSize(io.LimitReader(conn, maxHelloAnswer), 512), req)
	if err != nil {
		return &notTheDaemonError{addr: addr, reason: fmt.Sprintf("it did not answer the daemon's way (%v)", err)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	if err != nil {
		return &notTheDaemonError{addr: addr, reason: fmt.Sprintf("its answer broke off (%v)", err)}
	}
	if resp.StatusCode != http.StatusOK {
		return &notTheDaemonError{addr: addr, reason: fmt.Sprintf("it answers %s to %s", resp.Status, daemon.HelloPath)}
	}
	var ans struct {
		Proof string `json:"proof"`
	}
	if json.Unmarshal(body, &ans) != nil || !hmac.Equal([]byte(ans.Proof), []byte(daemon.HelloProof(local, nonce))) {
		return &notTheDaemonError{addr: addr, reason: "it does not know the admin token in the data directory"}
	}
	if resp.Close { // the daemon, but stopping: its server closes every connection
		return fmt.Errorf("the daemon at %s is shutting down", addr)
	}
	return conn.SetDeadline(time.Time{})
}

// asNotTheDaemon finds a notTheDaemonError in err.
func asNotTheDaemon(err error) (*notTheDaemonError, bool) {
	var e *notTheDaemonError
	ok := errors.As(err, &e)
	return e, ok
}
