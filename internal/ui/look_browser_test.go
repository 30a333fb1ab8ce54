package ui_test

// Browser tests of issue 34 (the console an operator keeps open): every page
// on a phone-sized screen and in the dark theme the system asks for.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
)

// phone makes the page a 390×844 phone screen (mobile viewport rules on).
func phone(t *testing.T, p *browser.Page) {
	t.Helper()
	if _, err := chromedp.Call(p.Context(), emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: 390, Height: 844, DeviceScaleFactor: 2, Mobile: true}); err != nil {
		t.Fatalf("emulate a phone: %v", err)
	}
}

// desktop ends phone's emulation.
func desktop(t *testing.T, p *browser.Page) {
	t.Helper()
	if _, err := chromedp.Call(p.Context(), emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
		t.Fatalf("end the phone emulation: %v", err)
	}
}

// colorScheme makes the page's system ask for scheme ("dark" or "light").
func colorScheme(t *testing.T, p *browser.Page, scheme string) {
	t.Helper()
	if _, err := chromedp.Call(p.Context(), emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatalf("emulate prefers-color-scheme %s: %v", scheme, err)
	}
}

// consolePages are the pages the navigation links to, plus the pages one
// reaches from them (a session, a persona's editor).
func consolePages(t *testing.T, p *browser.Page, base, session string) []string {
	t.Helper()
	p.Navigate(base + "/ui/")
	var links []string
	if err := json.Unmarshal([]byte(p.Eval(`JSON.stringify(Array.from(document.querySelectorAll("header nav a")).map(a => a.getAttribute("href")))`)), &links); err != nil {
		t.Fatal(err)
	}
	if len(links) < 10 {
		t.Fatalf("the navigation has %d links: %q", len(links), links)
	}
	return append(links, "/ui/sessions/show?key="+session, "/ui/personas/edit?name=assistant")
}

// overflowJS reports the elements that stick out of the viewport on the
// right (empty when the page fits).
const overflowJS = `(() => {
	const w = 390;
	if (window.innerWidth <= w && document.documentElement.scrollWidth <= window.innerWidth) { return ""; }
	const out = [];
	document.querySelectorAll("body *").forEach(el => {
		const r = el.getBoundingClientRect();
		if (r.right > w + 1 && out.length < 5) { out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (typeof el.className === "string" && el.className ? "." + el.className : "") + " right=" + Math.round(r.right)); }
	});
	return "scrollWidth " + document.documentElement.scrollWidth + ", innerWidth " + window.innerWidth + " (want both <= " + w + "): " + out.join(", ");
})()`

// contrastJS measures the page's colors: the body's background luminance,
// and the lowest contrast ratio of the texts that matter (body text, links,
// code, chart labels and bars) against the background they sit on.
const contrastJS = `(() => {
	const rgb = s => { const m = s.match(/[\d.]+/g); return m ? m.slice(0, 4).map(Number) : [0, 0, 0, 0]; };
	const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
	const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
	const bgOf = el => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
		if (c.length < 4 || c[3] > 0) { return c; } } return rgb(getComputedStyle(document.body).backgroundColor); };
	const body = rgb(getComputedStyle(document.body).backgroundColor);
	let worst = 99, what = "";
	const check = (sel, prop, min) => document.querySelectorAll(sel).forEach(el => {
		if (!el.getClientRects().length) { return; }
		const c = ratio(rgb(getComputedStyle(el)[prop]), bgOf(el.closest("svg") || el.parentElement || el)) / min;
		if (c < worst) { worst = c; what = sel + " " + getComputedStyle(el)[prop] + " on " + getComputedStyle(el.closest("svg") || el.parentElement).backgroundColor; }
	});
	check("main p, main td, main h1", "color", 4.5);
	check("header nav a, main a", "color", 4.5);
	check("main code", "color", 4.5);
	check("svg.chart text", "fill", 4.5);
	check("svg.chart rect", "fill", 3);
	return JSON.stringify({body: lum(body), worst: worst, what: what});
})()`

type colors struct {
	Body  float64 `json:"body"`  // relative luminance of the body's background
	Worst float64 `json:"worst"` // lowest contrast / its minimum (>= 1 passes)
	What  string  `json:"what"`
}

func measure(t *testing.T, p *browser.Page) colors {
	t.Helper()
	var c colors
	if err := json.Unmarshal([]byte(p.Eval(contrastJS)), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// Issue 34, item 6: at 390 pixels wide no page scrolls sideways (tables
// scroll in their own box), the menu is collapsed behind a button that opens
// it (no inline script), and with the system in dark mode every page is dark
// with readable text, links, code and charts — in light mode light.
func TestBrowserEveryPageFitsAPhoneAndFollowsDarkMode(t *testing.T) {
	r := startRig(t, rigOptions{LLM: streamedWithTool("It is late. " + strings.Repeat("unbroken", 40))})
	p := r.browse()
	conv := openChat(p, r.base)
	say(p, "what time is it? "+strings.Repeat("x", 300))
	p.WaitText("#chat-history .msg.assistant", "It is late.")
	pages := consolePages(t, p, r.base, "web:"+conv)

	phone(t, p)
	for _, scheme := range []string{"light", "dark"} {
		colorScheme(t, p, scheme)
		for _, path := range pages {
			p.Navigate(r.base + path)
			p.WaitVisible("main")
			if msg := p.Eval(overflowJS); msg != "" {
				t.Errorf("%s (%s, 390px): the page scrolls sideways: %s", path, scheme, msg)
			}
			c := measure(t, p)
			if dark := c.Body < 0.05; dark != (scheme == "dark") {
				t.Errorf("%s: with the system in %s mode the background's luminance is %.2f", path, scheme, c.Body)
			}
			if c.Worst < 1 {
				t.Errorf("%s (%s): too little contrast: %s (%.2f of the minimum)", path, scheme, c.What, c.Worst)
			}
		}
	}

	// The menu: collapsed on the phone, opened by its button.
	p.Navigate(r.base + "/ui/")
	p.WaitVisible("#menu-toggle")
	if vis := p.Eval(`String(document.querySelector("header nav").getClientRects().length > 0)`); vis != "false" {
		t.Errorf("on a phone the menu is open before it is asked for")
	}
	p.Click("#menu-toggle")
	p.WaitVisible(`header nav a[href="/ui/sessions"]`)
	p.ClickAndLoad(`header nav a[href="/ui/sessions"]`)
	if loc := p.Location(); !strings.HasSuffix(loc, "/ui/sessions") {
		t.Errorf("the opened menu's link went to %s", loc)
	}
	p.NoScriptRan()
	r.noSecretShown(p)
	if ex := p.Exceptions(); len(ex) > 0 {
		t.Errorf("script errors: %q", ex)
	}
}

// Issue 34, item 6: on a desktop screen the menu is a row of links (no
// button), in both themes.
func TestBrowserDesktopMenuIsOpen(t *testing.T) {
	r := startRig(t, rigOptions{})
	p := r.browse()
	for _, scheme := range []string{"light", "dark"} {
		colorScheme(t, p, scheme)
		p.Navigate(r.base + "/ui/")
		p.WaitVisible(`header nav a[href="/ui/chat"]`)
		if n := p.Eval(`String(document.getElementById("menu-toggle").getClientRects().length)`); n != "0" {
			t.Errorf("%s: the menu button shows on a desktop screen", scheme)
		}
	}
}
