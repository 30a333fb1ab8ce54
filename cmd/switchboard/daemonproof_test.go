package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// impostor is a program listening on server.listen while the daemon is
// down: it records everything it is sent.
type impostor struct {
	mu   sync.Mutex
	seen []string // each request: method, URL, headers and body
}

func (im *impostor) record(r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", r.Method, r.URL)
	for k, v := range r.Header {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(v, ", "))
	}
	b.Write(body)
	im.mu.Lock()
	im.seen = append(im.seen, b.String())
	im.mu.Unlock()
	r.Body = io.NopCloser(strings.NewReader(string(body)))
}

func (im *impostor) all() string {
	im.mu.Lock()
	defer im.mu.Unlock()
	return strings.Join(im.seen, "\n---\n")
}

// startImpostor serves answer on addr and records every request.
func startImpostor(t *testing.T, addr string, answer http.HandlerFunc) *impostor {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	im := &impostor{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		im.record(r)
		answer(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return im
}

// B7: the CLI sent its admin token to whatever listened at server.listen
// while the daemon was down. Now whatever answers must prove it is the
// daemon first; an impostor — however it answers the proof — is sent no
// token, and the command says what happened. The real daemon still serves
// the same commands.
func TestBinaryCLISendsNoTokenToAnImpostor(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		why    string
	}{
		{"answers everything like the daemon's status", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "Switchboard is running")
		}, "it does not know the admin token"},
		{"has no proof endpoint", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == daemon.HelloPath {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintln(w, "ok")
		}, "it answers 404 Not Found to " + daemon.HelloPath},
		{"proves another token", func(w http.ResponseWriter, r *http.Request) {
			nonce, _ := hex.DecodeString(r.PostFormValue("nonce"))
			fmt.Fprintf(w, `{"proof":%q}`, daemon.HelloProof(strings.Repeat("ab", 32), nonce))
		}, "it does not know the admin token"},
		{"echoes the nonce", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"proof":%q}`, r.PostFormValue("nonce"))
		}, "it does not know the admin token"},
		{"is not HTTP", nil, "it did not answer the daemon's way"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := freePort(t)
			cfg := writeConfig(t, fmt.Sprintf("bot:\n  data_dir: ./data\nserver:\n  listen: %s\n", addr))
			env := hermeticEnv(t)
			if r := runBin(t, env, "--config", cfg, "token", "rotate"); r.code != 0 {
				t.Fatalf("token rotate: %d %s", r.code, r.stderr)
			}
			tok, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "data", daemon.AdminTokenFile))
			if err != nil || len(strings.TrimSpace(string(tok))) != 64 {
				t.Fatalf("admin.token: %q %v", tok, err)
			}
			var im *impostor
			if c.answer != nil {
				im = startImpostor(t, addr, c.answer)
			} else {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				im = &impostor{}
				go func() {
					for {
						conn, err := ln.Accept()
						if err != nil {
							return
						}
						buf := make([]byte, 4096)
						n, _ := conn.Read(buf)
						im.mu.Lock()
						im.seen = append(im.seen, string(buf[:n]))
						im.mu.Unlock()
						_, _ = conn.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
						conn.Close()
					}
				}()
				t.Cleanup(func() { ln.Close() })
			}

			for _, cmd := range [][]string{{"status"}, {"console"}} {
				r := runBin(t, env, append([]string{"--config", cfg}, cmd...)...)
				want := "something answers at " + addr + ", but it is not this daemon: " + c.why
				if r.code == 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "the admin token was not sent to it") {
					t.Errorf("%s: exit %d, stderr %q; want it to say %q", cmd[0], r.code, r.stderr, want)
				}
			}
			seen := im.all()
			if seen == "" {
				t.Fatal("the impostor was never asked: the test proves nothing")
			}
			if strings.Contains(seen, strings.TrimSpace(string(tok))) || strings.Contains(strings.ToLower(seen), "authorization") {
				t.Errorf("the impostor was sent the admin token:\n%s", seen)
			}
			for _, req := range strings.Split(seen, "\n---\n") {
				if c.answer != nil && !strings.HasPrefix(req, "POST "+daemon.HelloPath+"\n") {
					t.Errorf("the impostor was sent more than the proof request:\n%s", req)
				}
			}
		})
	}
}

// The proof request carries a fresh nonce every time: an answer recorded
// once cannot be played back.
func TestProofNoncesAreFresh(t *testing.T) {
	var mu sync.Mutex
	nonces := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.PostFormValue("nonce")
		mu.Lock()
		dup := nonces[n]
		nonces[n] = true
		mu.Unlock()
		if dup || len(n) != 2*daemon.HelloNonceLen {
			t.Errorf("nonce %q (seen before: %v)", n, dup)
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c := &http.Client{Transport: verifiedTransport(func() string { return strings.Repeat("cd", 32) })}
	for range 20 {
		resp, err := c.Get(srv.URL + "/admin/status")
		if err == nil {
			resp.Body.Close()
			t.Fatal("a connection that failed the proof carried a request")
		}
		if e, ok := asNotTheDaemon(err); !ok || e.addr != u.Host {
			t.Fatalf("error %v, want a notTheDaemonError for %s", err, u.Host)
		}
	}
	if len(nonces) != 20 {
		t.Errorf("%d distinct nonces for 20 connections", len(nonces))
	}
}

// B8: a daemon started with `run --listen` (or before `config set
// server.listen`) listens elsewhere than the file says; CLI commands find it
// where it listens (<data_dir>/daemon.listen) and say so. After a crash the
// stale record sends nothing anywhere: with nothing there, or a program that
// took the recorded port and cannot prove it is the daemon, the command goes
// by server.listen, and that program is sent no token.
func TestBinaryCLIFindsTheDaemonWhereItListens(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	configured, actual := freePort(t), freePort(t)
	cfg := liveConfig(t, llm.URL, configured)
	env := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
	listenFile := filepath.Join(filepath.Dir(cfg), "data", daemon.ListenFile)
	note := "switchboard: note: the daemon listens at " + actual + "; server.listen in the config (" + configured + ") takes effect when it restarts"

	p := startDaemonBinArgs(t, env, cfg, actual, "--listen", actual)
	if got := strings.TrimSpace(readText(t, listenFile)); got != actual {
		t.Fatalf("%s holds %q, want %q", daemon.ListenFile, got, actual)
	}
	r := runBin(t, env, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "Switchboard status")
	expect(t, r, 0, r.stderr, note)
	p.stop(t)
	if _, err := os.Stat(listenFile); !os.IsNotExist(err) {
		t.Fatalf("%s is left after a clean stop: %v", daemon.ListenFile, err)
	}
	r = runBin(t, env, "--config", cfg, "status")
	expect(t, r, 1, r.stderr, "the daemon is not running: nothing answers at "+configured)

	p = startDaemonBinArgs(t, env, cfg, actual, "--listen", actual)
	p.kill()
	if got := strings.TrimSpace(readText(t, listenFile)); got != actual {
		t.Fatalf("after a crash %s holds %q, want the stale %q", daemon.ListenFile, got, actual)
	}
	r = runBin(t, env, "--config", cfg, "status")
	expect(t, r, 1, r.stderr, "the daemon is not running: nothing answers at "+configured)
	if strings.Contains(r.stderr, "note:") {
		t.Errorf("a stale record was reported as where the daemon listens: %s", r.stderr)
	}

	im := startImpostor(t, actual, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "Switchboard status")
	})
	// It cannot prove it is the daemon: the record is stale, the daemon is
	// not running (and the program was asked for a proof, nothing else).
	r = runBin(t, env, "--config", cfg, "status")
	expect(t, r, 1, r.stderr, "the daemon is not running: nothing answers at "+configured)
	tok := strings.TrimSpace(readText(t, filepath.Join(filepath.Dir(cfg), "data", daemon.AdminTokenFile)))
	seen := im.all()
	if seen == "" || strings.Contains(seen, tok) || strings.Contains(strings.ToLower(seen), "authorization") {
		t.Errorf("the program on the recorded port was sent (%d bytes):\n%s", len(seen), seen)
	}
	for _, req := range strings.Split(seen, "\n---\n") {
		if !strings.HasPrefix(req, "POST "+daemon.HelloPath+"\n") {
			t.Errorf("the program on the recorded port was sent more than the proof request:\n%s", req)
		}
	}
}

// A daemon that proves itself but closes the connection (its server is
// shutting down) is reported as stopping, not as something that is not the
// daemon, and the connection carries nothing.
func TestProofFromAStoppingDaemon(t *testing.T) {
	local := strings.Repeat("ef", 32)
	var asked sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.URL.Path, true)
		nonce, _ := hex.DecodeString(r.PostFormValue("nonce"))
		w.Header().Set("Connection", "close")
		fmt.Fprintf(w, `{"proof":%q}`, daemon.HelloProof(local, nonce))
	}))
	defer srv.Close()
	c := &http.Client{Transport: verifiedTransport(func() string { return local })}
	resp, err := c.Get(srv.URL + "/admin/status")
	if err == nil {
		resp.Body.Close()
		t.Fatal("a request went over a connection the daemon was closing")
	}
	if _, ok := asNotTheDaemon(err); ok || !strings.Contains(err.Error(), "is shutting down") {
		t.Errorf("error %q, want the daemon reported as shutting down", err)
	}
	if _, ok := asked.Load("/admin/status"); ok {
		t.Error("the request reached the server")
	}
}
