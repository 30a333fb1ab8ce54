package main

// Attacks from outside (helper A5) on B7 (the daemon proves itself before the CLI
// sends a token) and B8 (<data_dir>/daemon.listen), with the built binary.

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// B7, broke once (fixed): the configured server.admin_token is sent unchecked to whatever
// answers at server.listen when <data_dir>/admin.token does not exist (the
// daemon never started on this data directory yet, or it was moved) — same
// user, nothing unreadable: exactly "a program on the port while the daemon
// is down".
func TestConfiguredTokenIsNotSentUncheckedBeforeTheFirstStart(t *testing.T) {
	const secret = "a5-configured-admin-token-0123456789abcdef"
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf("bot:\n  data_dir: ./data\nserver:\n  listen: %s\n  admin_token: ${SB_A5_ADMIN}\n", addr))
	env := hermeticEnv(t, "SB_A5_ADMIN="+secret)
	im := startImpostor(t, addr, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == daemon.HelloPath {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "Switchboard status")
	})
	r := runBin(t, env, "--config", cfg, "status")
	seen := im.all()
	if seen == "" {
		t.Fatal("the impostor was never asked: the test proves nothing")
	}
	if strings.Contains(seen, secret) {
		t.Errorf("status (exit %d) sent server.admin_token to a program that never proved it is the daemon:\n%s\nstderr: %s", r.code, seen, r.stderr)
	}
}

// B7, broke once (fixed): the proof answer's header is read without a bound, so a program
// on the port makes the CLI read (and hold) whatever it sends for the ten
// seconds the proof may take — hundreds of MiB on loopback.
func TestProofAnswerWithEndlessHeaderIsBounded(t *testing.T) {
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf("bot:\n  data_dir: ./data\nserver:\n  listen: %s\n", addr))
	env := hermeticEnv(t)
	if r := runBin(t, env, "--config", cfg, "token", "rotate"); r.code != 0 {
		t.Fatalf("token rotate: %d %s", r.code, r.stderr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	const offered = 64 << 20 // far beyond any socket buffer
	var written atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = conn.Read(make([]byte, 4096))
		if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Pad: "); err != nil {
			return
		}
		chunk := []byte(strings.Repeat("a", 64<<10))
		for written.Load() < offered {
			n, err := conn.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	r := runBin(t, env, "--config", cfg, "status")
	<-done
	if got := written.Load(); got >= offered {
		t.Errorf("the CLI read a %d MiB header line from the proof answer (it should give up after a bound); exit %d, stderr %q",
			got>>20, r.code, r.stderr)
	}
	expect(t, r, 1, r.stderr, "but it is not this daemon")
}

// B8, broke once (fixed): `switchboard healthcheck` (the Docker HEALTHCHECK) asks
// server.listen only, so a daemon started with `run --listen` (or after
// `config set server.listen`) is reported down while it runs.
func TestHealthcheckFindsTheDaemonWhereItListens(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	configured, actual := freePort(t), freePort(t)
	cfg := liveConfig(t, llm.URL, configured)
	env := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
	startDaemonBinArgs(t, env, cfg, actual, "--listen", actual)
	r := runBin(t, env, "--config", cfg, "healthcheck")
	expect(t, r, 0, r.stdout, "ok")
}

// B8, broke once (fixed): with server.listen naming a host (localhost:PORT), the daemon
// records the address it bound (127.0.0.1:PORT), and every command then says
// the daemon listens elsewhere and the config's address "takes effect when it
// restarts" — though it is the same address.
func TestNoFalseNoteWhenServerListenIsAHostName(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	_, port, _ := net.SplitHostPort(freePort(t))
	listen := "localhost:" + port
	cfg := liveConfig(t, llm.URL, listen)
	env := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
	startDaemonBin(t, env, cfg, "127.0.0.1:"+port)
	r := runBin(t, env, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "Switchboard status")
	if strings.Contains(r.stderr, "takes effect when it restarts") {
		t.Errorf("status says server.listen %s differs from where the daemon listens:\n%s", listen, r.stderr)
	}
}

// A `switchboard chat` session keeps working across a daemon restart: new
// connections prove themselves again. Held for a plain restart; broke once
// (fixed) across a `token rotate` (staged while the daemon ran, adopted at
// its restart): the chat held the old admin.token, the restarted daemon's
// proof failed, and the chat ended saying the real daemon "is not this
// daemon". The token is now read for every connection.
func TestChatAcrossDaemonRestart(t *testing.T) {
	for _, rotate := range []bool{false, true} {
		t.Run(fmt.Sprintf("token rotated %v", rotate), func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Echo())
			addr := freePort(t)
			cfg := liveConfig(t, llm.URL, addr)
			env := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
			d := startDaemonBin(t, env, cfg, addr)

			c := startChatBin(t, env, cfg)
			out, errb, stdin, exited, dump := c.out, c.err, c.stdin, c.exited, c.dump
			awaitCond(t, "the chat banner", func() bool { return strings.Contains(out.String(), "through the running daemon") }, dump)
			if _, err := io.WriteString(stdin, "before restart\n"); err != nil {
				t.Fatal(err)
			}
			awaitCond(t, "the first answer", func() bool { return strings.Contains(out.String(), "echo: before restart") }, dump)
			if rotate {
				if r := runBin(t, env, "--config", cfg, "token", "rotate"); r.code != 0 {
					t.Fatalf("token rotate: %d %s", r.code, r.stderr)
				}
			}
			d.stop(t)
			startDaemonBin(t, env, cfg, addr)
			if _, err := io.WriteString(stdin, "after restart\n"); err != nil {
				t.Fatal(err)
			}
			var early error
			ended := false
			awaitCond(t, "the answer after the restart", func() bool {
				select {
				case early = <-exited:
					ended = true
				default:
				}
				return ended || strings.Contains(out.String(), "echo: after restart")
			}, dump)
			if ended || strings.Contains(errb.String(), "not this daemon") {
				t.Fatalf("chat broke across the restart (%v)\n%s", early, dump())
			}
			stdin.Close()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("chat exit: %v\n%s", err, dump())
				}
			case <-time.After(waitHang):
				t.Fatalf("chat did not end on EOF\n%s", dump())
			}
		})
	}
}

// Held: every new connection proves itself before it carries a request,
// also when the server closes each connection after an answer (Connection:
// close) — a connection is never reused without its own proof. (A daemon
// that closes right after its proof is stopping: TestProofFromAStoppingDaemon.)
func TestEveryNewConnectionProvesItself(t *testing.T) {
	local := strings.Repeat("5a", 32)
	for _, mode := range []string{"connection close", "keep-alive"} {
		t.Run(mode, func(t *testing.T) {
			var mu sync.Mutex
			var order []string // per connection: first request path, then the rest
			conns := map[string]int{}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				i, ok := conns[r.RemoteAddr]
				if !ok {
					i = len(order)
					conns[r.RemoteAddr] = i
					order = append(order, "")
				}
				order[i] += r.URL.Path + " " + r.Header.Get("Authorization") + ";"
				mu.Unlock()
				if r.URL.Path == daemon.HelloPath {
					nonce, _ := hex.DecodeString(r.PostFormValue("nonce"))
					fmt.Fprintf(w, `{"proof":%q}`, daemon.HelloProof(local, nonce))
					return
				}
				if mode == "connection close" {
					w.Header().Set("Connection", "close")
				}
				fmt.Fprintln(w, "ok")
			}))
			srv.Start()
			defer srv.Close()
			c := &http.Client{Transport: verifiedTransport(func() string { return local })}
			for i := range 3 {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/admin/status", nil)
				req.Header.Set("Authorization", "Bearer tok")
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, o := range order {
				if !strings.HasPrefix(o, daemon.HelloPath+" ;") {
					t.Errorf("a connection carried a request before its proof: %s", o)
				}
			}
			if mode != "keep-alive" && len(order) != 3 {
				t.Errorf("%d connections for 3 requests, want 3: %v", len(order), order)
			}
		})
	}
}

// Held: an impostor that passes the proof only on a relay cannot be set up
// where the CLI looks while the daemon runs: with the daemon on another port
// (run --listen) the CLI goes to the recorded address, and the relay on
// server.listen is never asked anything.
func TestRelayOnServerListenIsNotAsked(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	configured, actual := freePort(t), freePort(t)
	cfg := liveConfig(t, llm.URL, configured)
	env := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
	startDaemonBinArgs(t, env, cfg, actual, "--listen", actual)

	ln, err := net.Listen("tcp", configured)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var relayed atomic.Int64
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			relayed.Add(1)
			go relay(in, actual)
		}
	}()
	for _, cmd := range [][]string{{"status"}, {"sessions", "list"}, {"pairing", "list"}, {"jobs", "list"}, {"audit"}} {
		r := runBin(t, env, append([]string{"--config", cfg}, cmd...)...)
		if r.code != 0 {
			t.Errorf("%v: exit %d\n%s", cmd, r.code, r.stderr)
		}
	}
	if n := relayed.Load(); n != 0 {
		t.Errorf("the relay on server.listen was dialed %d times while the daemon listened elsewhere", n)
	}
}

// relay copies bytes between in and the daemon at addr.
func relay(in net.Conn, addr string) {
	defer in.Close()
	out, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer out.Close()
	go func() { _, _ = io.Copy(out, in) }()
	_, _ = io.Copy(in, bufio.NewReader(out))
}

// B8, broke once (fixed): after a crash (SIGKILL) the stale daemon.listen names a port
// another program has taken since. Nothing holds the database, yet `config
// set` refuses to write ("could not ask the running daemon") and commands
// say "note: the daemon listens at <that port>". A stale record should be
// as if there were none: the daemon is not running.
func TestStaleListenFileWithAnotherProgramThereDoesNotBlockConfigSet(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	configured, actual := freePort(t), freePort(t)
	cfg := liveConfig(t, llm.URL, configured)
	env := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
	p := startDaemonBinArgs(t, env, cfg, actual, "--listen", actual)
	p.kill()
	startImpostor(t, actual, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })

	r := runBin(t, env, "--config", cfg, "config", "set", "llm.model", "gpt-4.1-mini")
	if r.code != 0 || !strings.Contains(readText(t, cfg), "gpt-4.1-mini") {
		t.Errorf("config set with the daemon stopped: exit %d, file not changed\nstderr: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "the daemon listens at "+actual) {
		t.Errorf("a stale record was reported as where the daemon listens:\n%s", r.stderr)
	}
}

// Held: a second `run --listen` on the same data directory fails at the
// store lock before it listens, and leaves the first daemon's record alone:
// commands still find the first daemon.
func TestSecondDaemonOnTheSameDataDirKeepsTheFirstsRecord(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	configured, first, second := freePort(t), freePort(t), freePort(t)
	cfg := liveConfig(t, llm.URL, configured)
	env := hermeticEnv(t, "SB_E2E_KEY="+e2eKey)
	startDaemonBinArgs(t, env, cfg, first, "--listen", first)
	r := runBin(t, env, "--config", cfg, "run", "--listen", second)
	expect(t, r, 1, r.stderr, "database is in use by another switchboard process")
	if got := strings.TrimSpace(readText(t, filepath.Join(filepath.Dir(cfg), "data", daemon.ListenFile))); got != first {
		t.Errorf("%s holds %q after the second daemon failed, want %q", daemon.ListenFile, got, first)
	}
	r = runBin(t, env, "--config", cfg, "status")
	expect(t, r, 0, r.stdout, "Switchboard status")
}
