package browser

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const csp = "default-src 'self'; script-src 'self'; style-src 'self'"

// site serves the pages the harness is tried on.
func site(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(policy, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if policy != "" {
				w.Header().Set("Content-Security-Policy", policy)
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<!doctype html><html><body>" + body + "</body></html>"))
		}
	}
	mux.HandleFunc("/form", page(csp, `<form id="f"><input name="q" id="q"><button type="submit">Go</button></form>
		<p id="out">nothing yet</p><script src="/app.js"></script>`))
	mux.HandleFunc("/app.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(`document.getElementById("f").addEventListener("submit", e => {
			e.preventDefault();
			setTimeout(() => { document.getElementById("out").textContent = "you said " + document.getElementById("q").value; }, 50);
		});`))
	})
	mux.HandleFunc("/xss-open", page("", `<div id="m"><img src=x onerror=alert(1)></div>`))
	mux.HandleFunc("/xss-blocked", page(csp, `<div id="m"><img src=x onerror=alert(1)></div>`))
	mux.HandleFunc("/inert", page(csp, `<div id="m">&lt;img src=x onerror=alert(1)&gt;</div>`))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestFindHonoursTheEnvironment(t *testing.T) {
	t.Setenv(EnvChromium, filepath.Join(t.TempDir(), "no-such-browser"))
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), EnvChromium) {
		t.Fatalf("Find with a missing $%s = %v, want an error naming it", EnvChromium, err)
	}
}

func TestHelpersDriveAPage(t *testing.T) {
	srv := site(t)
	p := Start(t, Options{Timeout: 10 * time.Second})
	p.Navigate(srv.URL + "/form")
	p.Fill("#q", "hello <b>")
	p.Click(`button[type="submit"]`)
	p.WaitText("#out", "you said hello <b>")
	if got := p.Text("#out"); got != "you said hello <b>" {
		t.Fatalf("Text = %q", got)
	}
	if n := p.Count("input"); n != 1 {
		t.Fatalf("Count(input) = %d", n)
	}
	shot := filepath.Join(t.TempDir(), "shots", "form.png")
	p.Screenshot(shot)
	b, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("screenshot is not a PNG (err %v)", err)
	}
	p.NoScriptRan()
}

func TestScriptThatRanIsCaught(t *testing.T) {
	srv := site(t)
	p := Start(t, Options{Timeout: 10 * time.Second})
	tests := []struct {
		path                    string
		wantDialog, wantBlocked bool
	}{
		{"/inert", false, false},
		{"/xss-open", true, false},    // no policy: the handler runs and opens a dialog
		{"/xss-blocked", false, true}, // the policy blocks the handler and says so
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			before, beforeCSP := len(p.Dialogs()), len(p.CSPViolations())
			p.Navigate(srv.URL + tc.path)
			p.WaitVisible("#m")
			if tc.wantDialog {
				waitUntil(t, "a dialog", func() bool { return len(p.Dialogs()) > before })
			}
			if tc.wantBlocked {
				waitUntil(t, "a CSP report", func() bool { return len(p.CSPViolations()) > beforeCSP })
			}
			if !tc.wantDialog && len(p.Dialogs()) != before {
				t.Fatalf("unexpected dialog: %v", p.Dialogs())
			}
			if !tc.wantBlocked && len(p.CSPViolations()) != beforeCSP {
				t.Fatalf("unexpected CSP report: %v", p.CSPViolations())
			}
		})
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang detector
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
