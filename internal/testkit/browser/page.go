package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// pollEvery is how often a wait re-reads the page.
const pollEvery = 25 * time.Millisecond

// bounded returns a context for one helper call.
func (p *Page) bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, p.timeout)
}

// Navigate loads url and waits for the page to load.
func (p *Page) Navigate(url string) {
	p.t.Helper()
	ctx, cancel := p.bounded()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		p.t.Fatalf("navigate to %s: %v", url, err)
	}
}

// Location is the page's current URL.
func (p *Page) Location() string {
	p.t.Helper()
	ctx, cancel := p.bounded()
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		p.t.Fatalf("read the location: %v", err)
	}
	return loc
}

// Login opens base+"/ui/login", enters token in the token field, submits
// the form and waits until the browser has left the login page.
func (p *Page) Login(base, token string) {
	p.t.Helper()
	p.Navigate(strings.TrimRight(base, "/") + "/ui/login")
	p.Fill(`input[name="token"]`, token)
	p.Click(`form button[type="submit"], form input[type="submit"]`)
	p.WaitFor("the console after login", `!location.pathname.startsWith("/ui/login")`)
}

// Fill sets the value of the form field matching the CSS selector sel, as
// typing it would (input and change events fire).
func (p *Page) Fill(sel, value string) {
	p.t.Helper()
	ctx, cancel := p.bounded()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		p.t.Fatalf("fill %s: the field is not there: %v", sel, err)
	}
	// Setting .value and dispatching the events is what a user's typing ends
	// in; it handles multi-line text and textareas the same way.
	js := fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		el.focus();
		el.value = %s;
		el.dispatchEvent(new Event("input", {bubbles: true}));
		el.dispatchEvent(new Event("change", {bubbles: true}));
		return true;
	})()`, jsString(sel), jsString(value))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
		p.t.Fatalf("fill %s: %v", sel, err)
	}
}

// Select picks the option with value in the <select> matching sel.
func (p *Page) Select(sel, value string) {
	p.t.Helper()
	p.Fill(sel, value)
	if got := p.Value(sel); got != value {
		p.t.Fatalf("select %s: no option %q (value is %q)", sel, value, got)
	}
}

// Value is the current value of the form field matching sel.
func (p *Page) Value(sel string) string {
	p.t.Helper()
	return p.Eval(fmt.Sprintf(`(document.querySelector(%s) || {}).value ?? null`, jsString(sel)))
}

// Click waits until the element matching sel is visible and clicks it with
// the mouse.
func (p *Page) Click(sel string) {
	p.t.Helper()
	ctx, cancel := p.bounded()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		p.t.Fatalf("click %s: %v", sel, err)
	}
}

// ClickAndLoad clicks the element matching sel and waits until the click
// has loaded a new document (a form post and its redirect): the old
// document is marked first, so the wait cannot end on the page that was
// already there.
func (p *Page) ClickAndLoad(sel string) {
	p.t.Helper()
	p.Eval(`window.__sbOldDocument = true`)
	p.Click(sel)
	p.WaitFor("a new page after clicking "+sel, `!window.__sbOldDocument && document.readyState === "complete"`)
}

// Text is the text of the first element matching sel ("" if none).
func (p *Page) Text(sel string) string {
	p.t.Helper()
	return p.Eval(fmt.Sprintf(`(document.querySelector(%s) || {}).textContent ?? ""`, jsString(sel)))
}

// Count is the number of elements matching sel.
func (p *Page) Count(sel string) int {
	p.t.Helper()
	ctx, cancel := p.bounded()
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(sel))))
	if err != nil {
		p.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// Eval evaluates a JavaScript expression through DevTools (not page script:
// the page's Content-Security-Policy does not apply) and returns its value
// as a string ("" for null or undefined).
func (p *Page) Eval(expr string) string {
	p.t.Helper()
	s, err := p.eval(expr)
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

func (p *Page) eval(expr string) (string, error) {
	ctx, cancel := p.bounded()
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](fmt.Sprintf(`(() => { const v = (%s); return v == null ? "" : String(v); })()`, expr)))
	if err != nil {
		return "", err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("decode %s: %w", raw, err)
	}
	return s, nil
}

// WaitFor waits until the JavaScript expression cond is truthy, re-reading
// the page every 25ms, and fails the test after the timeout saying what
// was awaited. A navigation in between is not an error.
func (p *Page) WaitFor(what, cond string) {
	p.t.Helper()
	if err := p.waitFor(cond); err != nil {
		p.t.Fatalf("waiting for %s: %v (page %s)", what, err, p.describe())
	}
}

func (p *Page) waitFor(cond string) error {
	deadline := time.Now().Add(p.timeout)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last error
	for {
		v, err := p.eval(fmt.Sprintf(`(%s) ? "1" : ""`, cond))
		if err == nil && v == "1" {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("%w after %s (last error: %v)", ErrTimeout, p.timeout, last)
			}
			return fmt.Errorf("%w after %s", ErrTimeout, p.timeout)
		}
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		case <-tick.C:
		}
	}
}

// WaitText waits until the text of an element matching sel contains text
// (any of the matches; textContent, so collapsed <details> count).
func (p *Page) WaitText(sel, text string) {
	p.t.Helper()
	cond := fmt.Sprintf(`[...document.querySelectorAll(%s)].some(e => e.textContent.includes(%s))`, jsString(sel), jsString(text))
	if err := p.waitFor(cond); err != nil {
		p.t.Fatalf("waiting for %q in %s: %v; it shows %q", text, sel, err, clip(p.texts(sel), 600))
	}
}

// WaitVisible waits until an element matching sel is shown.
func (p *Page) WaitVisible(sel string) {
	p.t.Helper()
	ctx, cancel := p.bounded()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		p.t.Fatalf("waiting for %s to show: %v (page %s)", sel, err, p.describe())
	}
}

// texts joins the text of every element matching sel, for failure messages.
func (p *Page) texts(sel string) string {
	s, err := p.eval(fmt.Sprintf(`[...document.querySelectorAll(%s)].map(e => e.textContent.trim()).join(" | ")`, jsString(sel)))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// describe names the page for failure messages: its URL and the start of
// its text.
func (p *Page) describe() string {
	s, err := p.eval(`location.href + " — " + (document.body ? document.body.innerText : "")`)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return clip(strings.Join(strings.Fields(s), " "), 800)
}

// Screenshot saves a PNG of the viewport to path, creating its directory.
func (p *Page) Screenshot(path string) {
	p.t.Helper()
	ctx, cancel := p.bounded()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
