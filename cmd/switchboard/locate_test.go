package main

// Issue 14 item 2: one helper (locate) decides for every command whether it
// goes through the running daemon's admin API or opens the store: pairing,
// jobs and status included. The test holds the database lock itself (as a
// running daemon does) and answers the admin API with a fake.

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// fakeAdmin answers the admin API with canned JSON and records what it got.
type fakeAdmin struct {
	mu    sync.Mutex
	seen  []string // "METHOD /path form"
	local string   // the local admin token it proves itself with (daemonproof.go)
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	if r.URL.Path == daemon.HelloPath {
		nonce, _ := hex.DecodeString(r.PostForm.Get("nonce"))
		f.mu.Lock()
		local := f.local
		f.mu.Unlock()
		fmt.Fprintf(w, `{"proof":%q}`, daemon.HelloProof(local, nonce))
		return
	}
	f.mu.Lock()
	f.seen = append(f.seen, fmt.Sprintf("%s %s %s auth=%s", r.Method, r.URL.Path, r.PostForm.Encode(), r.Header.Get("Authorization")))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/admin/status":
		fmt.Fprintln(w, "Switchboard status (fake)")
	case "/admin/pairing":
		fmt.Fprint(w, `[{"Code":"ABCD2345","User":"telegram:user:7","Name":"Ann","Expires":"2030-01-01T00:00:00Z"}]`)
	case "/admin/pairing/approve":
		fmt.Fprint(w, `{"Code":"ABCD2345","User":"telegram:user:7","Name":"Ann"}`)
	case "/admin/jobs":
		fmt.Fprint(w, `[{"Name":"standup","Kind":"reminder","Source":"config","Schedule":"0 9 * * *","State":"active"}]`)
	case "/admin/jobs/pause":
		fmt.Fprint(w, `"paused standup"`)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAdmin) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func TestLocateRoutesEveryCommand(t *testing.T) {
	admin := &fakeAdmin{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(admin)
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	cfg := writeConfig(t, fmt.Sprintf("bot:\n  data_dir: ./data\npersonas:\n  dir: ./personas\nserver:\n  listen: %s\n  admin_token: tok-locate-1\n", ln.Addr()))
	db := filepath.Join(filepath.Dir(cfg), "data", "switchboard.db")

	cases := []struct {
		args []string
		want string // on stdout
		req  string // what the daemon was asked
	}{
		{[]string{"status"}, "Switchboard status (fake)", "GET /admin/status  auth=Bearer tok-locate-1"},
		{[]string{"pairing", "list"}, "ABCD2345", "GET /admin/pairing  auth=Bearer tok-locate-1"},
		{[]string{"pairing", "approve", "abcd2345"}, "approved telegram:user:7 (Ann)", "POST /admin/pairing/approve code=abcd2345 auth=Bearer tok-locate-1"},
		{[]string{"jobs", "list"}, "standup", "GET /admin/jobs  auth=Bearer tok-locate-1"},
		{[]string{"jobs", "pause", "standup"}, "paused standup", "POST /admin/jobs/pause name=standup auth=Bearer tok-locate-1"},
	}
	runCLI := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), waitHang)
		defer cancel()
		code := run(ctx, append([]string{"--config", cfg}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}

	// No data yet: status still asks the daemon; the store commands that
	// read say so without asking it or creating anything. Without
	// admin.token nothing can prove it is the daemon, so the configured
	// token is not sent to this machine's loopback (daemonproof.go).
	if code, out, _ := runCLI("status"); code != 0 || !strings.Contains(out, "Switchboard status (fake)") {
		t.Fatalf("status without data: exit %d %q", code, out)
	}
	if code, _, errs := runCLI("pairing", "list"); code != 1 || !strings.Contains(errs, "no data yet") {
		t.Fatalf("pairing list without data: exit %d %q", code, errs)
	}
	if got := admin.requests(); len(got) != 1 || got[0] != "GET /admin/status  auth=" {
		t.Fatalf("without data the daemon was asked %q, want only the status, without a token", got)
	}
	if _, err := os.Stat(filepath.Dir(db)); !os.IsNotExist(err) {
		t.Fatalf("the data directory was created: %v", err)
	}

	// The "daemon" holds the database: every command goes to its admin API.
	st, err := bolt.Open(db, memory.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const local = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(filepath.Join(filepath.Dir(db), daemon.AdminTokenFile), []byte(local+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	admin.mu.Lock()
	admin.local = local
	admin.mu.Unlock()
	for _, tt := range cases {
		before := len(admin.requests())
		code, out, errs := runCLI(tt.args...)
		if code != 0 || !strings.Contains(out, tt.want) {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", tt.args, code, out, errs)
		}
		got := admin.requests()[before:]
		if len(got) != 1 || got[0] != tt.req {
			t.Fatalf("%v asked the daemon %q, want %q", tt.args, got, tt.req)
		}
	}
}
