// Package browser drives headless Chromium for the web console's browser
// tests through github.com/chromedp/chromedp. It owns finding the browser
// (SWITCHBOARD_CHROMIUM, then chromium, chromium-browser, google-chrome on
// PATH — Debian's chromium package in CI, installed by .ci/run), starting it
// with a throwaway profile (no sandbox when running as root, which Chromium
// refuses otherwise), stopping it when the test ends (the process is reaped
// by chromedp's allocator), and the few page helpers the tests need: log
// in, navigate, wait for text, click, fill, read, screenshot.
//
// It also watches the page for script that should not have run: every
// JavaScript dialog (alert, confirm, prompt) is recorded and dismissed,
// console calls and uncaught exceptions are recorded, and so are the
// browser's own log entries, among them Content-Security-Policy violations
// (an inline handler the policy blocked means markup got into the page as
// HTML). NoScriptRan fails the test on any dialog or CSP violation.
//
// A test without Chromium is skipped with a message saying how to get one.
// Page helpers fail the test (t.Fatalf) on error or after the timeout;
// they never sleep for a fixed time to wait for something.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// EnvChromium names the browser binary to use instead of searching PATH.
const EnvChromium = "SWITCHBOARD_CHROMIUM"

// candidates are the names searched on PATH, in order.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the Chromium binary: $SWITCHBOARD_CHROMIUM if set (it must
// exist), else the first of chromium, chromium-browser, google-chrome on
// PATH.
func Find() (string, error) {
	if p := os.Getenv(EnvChromium); p != "" {
		abs, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvChromium, p, err)
		}
		return abs, nil
	}
	for _, name := range candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found (looked for %s on PATH and $%s); on Debian: apt-get install chromium",
		strings.Join(candidates, ", "), EnvChromium)
}

// Options configures Start. Zero values take the defaults shown.
type Options struct {
	Timeout time.Duration // bound of each helper's wait; default 15s
	Width   int           // viewport; default 1280
	Height  int           // default 900
}

// Page is one browser tab of a headless Chromium that lives until the test
// ends.
type Page struct {
	t       testing.TB
	ctx     context.Context // the tab's chromedp context
	timeout time.Duration

	mu         sync.Mutex
	dialogs    []string
	console    []string
	exceptions []string
	logs       []string
	responses  []string // URLs whose response headers arrived, in order

	handlers sync.WaitGroup // dialog dismissals in flight
}

// Start launches headless Chromium with a fresh profile and opens a tab. It
// skips the test when no Chromium is found. The browser is stopped, and its
// process reaped, when the test ends.
func Start(t testing.TB, o Options) *Page {
	t.Helper()
	path, err := Find()
	if err != nil {
		t.Skipf("browser test skipped: %v", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	if o.Width <= 0 {
		o.Width = 1280
	}
	if o.Height <= 0 {
		o.Height = 900
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.DisableGPU,
		chromedp.Flag("no-proxy-server", true), // the daemon is on loopback; never a proxy
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with the sandbox
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	p := &Page{t: t, ctx: ctx, timeout: o.Timeout}
	t.Cleanup(func() {
		cancelTab()
		p.handlers.Wait()
		cancelAlloc() // waits for the browser process to exit
	})
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Listen(ctx, p.onEvent); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	if err := chromedp.Do(startCtx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	return p
}

// onEvent records what the page did. It runs on chromedp's reading
// goroutine, so it must not call the browser: a dialog is dismissed from a
// goroutine of its own (Page.handlers, waited for at the end of the test).
func (p *Page) onEvent(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		p.dialogs = append(p.dialogs, fmt.Sprintf("%s(%q) on %s", ev.Type, ev.Message, ev.URL))
		p.handlers.Go(func() {
			ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
			defer cancel()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		})
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			args = append(args, remoteText(a))
		}
		p.console = append(p.console, fmt.Sprintf("console.%s(%s)", ev.Type, strings.Join(args, ", ")))
	case *runtime.EventExceptionThrown:
		if d := ev.ExceptionDetails; d != nil {
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			p.exceptions = append(p.exceptions, fmt.Sprintf("%s (%s:%d)", text, d.URL, d.LineNumber+1))
		}
	case *network.EventResponseReceived:
		if ev.Response != nil {
			p.responses = append(p.responses, ev.Response.URL)
		}
	case *log.EventEntryAdded:
		if e := ev.Entry; e != nil {
			p.logs = append(p.logs, fmt.Sprintf("%s %s: %s", e.Level, e.Source, e.Text))
		}
	}
}

func remoteText(a *runtime.RemoteObject) string {
	if a == nil {
		return ""
	}
	if len(a.Value) > 0 {
		return string(a.Value)
	}
	return a.Description
}

// Context is the tab's chromedp context, for actions the helpers lack.
func (p *Page) Context() context.Context { return p.ctx }

// Dialogs lists the JavaScript dialogs the page opened (each was dismissed).
func (p *Page) Dialogs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.dialogs...)
}

// Console lists the page's console calls.
func (p *Page) Console() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.console...)
}

// Exceptions lists the page's uncaught exceptions.
func (p *Page) Exceptions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.exceptions...)
}

// CSPViolations lists the browser's reports of Content-Security-Policy
// violations.
func (p *Page) CSPViolations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range append(p.console, p.logs...) {
		if strings.Contains(l, "Content Security Policy") {
			out = append(out, l)
		}
	}
	return out
}

// ResponseMark is a position in the page's response log for WaitResponse.
func (p *Page) ResponseMark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.responses)
}

// WaitResponse waits until, after mark, the response headers of a request
// whose URL contains part arrived: for a Server-Sent Events stream, that
// the server has opened it.
func (p *Page) WaitResponse(mark int, part string) {
	p.t.Helper()
	deadline := time.Now().Add(p.timeout)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		p.mu.Lock()
		seen := p.responses[min(mark, len(p.responses)):]
		p.mu.Unlock()
		for _, u := range seen {
			if strings.Contains(u, part) {
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no response from a URL with %q within %s (responses: %q)", part, p.timeout, seen)
		}
		<-tick.C
	}
}

// NoScriptRan fails the test if the page opened a dialog or the browser
// reported a Content-Security-Policy violation: either means text got into
// the page as markup.
func (p *Page) NoScriptRan() {
	p.t.Helper()
	if d := p.Dialogs(); len(d) > 0 {
		p.t.Fatalf("script ran in the page: dialogs %q", d)
	}
	if v := p.CSPViolations(); len(v) > 0 {
		p.t.Fatalf("the page tried to run script the Content-Security-Policy blocked: %q", v)
	}
}

// ErrTimeout is what a helper's wait reports when its condition never held.
var ErrTimeout = errors.New("timed out")
