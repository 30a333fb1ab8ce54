package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// hostile is text a stranger controls (a display name, a message) with the
// escape sequences a terminal acts on: clear the screen, set the window
// title, put "pwned" on the clipboard (OSC 52), and a carriage return that
// writes over the start of the line.
const hostile = "Eve\x1b[2J\x1b]0;title\x07\x1b]52;c;cHduZWQ=\x07\rMallory\u009b31m"

// TestListingsShowNoTerminalControls: what the CLI lists (pairing requests,
// sessions, the audit log) holds text strangers and models wrote; the
// operator's terminal gets it with its control characters made visible, not
// acted on.
func TestListingsShowNoTerminalControls(t *testing.T) {
	check := func(what, out string) {
		t.Helper()
		for _, c := range []string{"\x1b", "\x07", "\r", "\u009b"} {
			if strings.Contains(out, c) {
				t.Errorf("%s prints the control character %q:\n%q", what, c, out)
			}
		}
		if !strings.Contains(out, "Eve") || !strings.Contains(out, "Mallory") {
			t.Errorf("%s lost the text around the controls:\n%q", what, out)
		}
	}
	runCLI := func(cfg string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), waitHang)
		defer cancel()
		if code := run(ctx, append([]string{"--config", cfg}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errb.String())
		}
		return out.String()
	}

	// From the store (no daemon running).
	cfg := writeConfig(t, "bot:\n  data_dir: ./data\npersonas:\n  dir: ./personas\nserver:\n  listen: \"\"\n")
	db := filepath.Join(filepath.Dir(cfg), "data", "switchboard.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(db, memory.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	if err := st.AppendTurn(ctx, "telegram:7", memory.Turn{ID: "t1", Started: now, Ended: now, Answer: "ok", Messages: []memory.Message{
		{Role: "user", Name: hostile, Content: "hi " + hostile, Time: now},
		{Role: "assistant", Content: "ok " + hostile, Time: now},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Audit(ctx, memory.AuditRecord{Time: now, Actor: "telegram:user:7", Action: "pairing.request", Session: "telegram:7", Detail: hostile}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	check("sessions show", runCLI(cfg, "sessions", "show", "telegram:7"))
	check("audit", runCLI(cfg, "audit"))

	// Through the running daemon's admin API.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/admin/pairing":
			name, _ := json.Marshal(hostile)
			fmt.Fprintf(w, `[{"Code":"ABCD2345","User":"telegram:user:7","Name":%s,"Expires":"2030-01-01T00:00:00Z"}]`, name)
		case "/admin/status":
			fmt.Fprintln(w, "channel telegram: not connected: "+hostile)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	remote := writeConfig(t, fmt.Sprintf("bot:\n  data_dir: ./data\npersonas:\n  dir: ./personas\nserver:\n  listen: %s\n  admin_token: tok-termsafe\n", ln.Addr()))
	rdb := filepath.Join(filepath.Dir(remote), "data", "switchboard.db")
	if err := os.MkdirAll(filepath.Dir(rdb), 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := bolt.Open(rdb, memory.Options{Timeout: time.Second}) // as a running daemon holds it
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	check("pairing list", runCLI(remote, "pairing", "list"))
	check("status", runCLI(remote, "status"))
}
