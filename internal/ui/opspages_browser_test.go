package ui_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/browser"
)

// Issue 34, item 4, in a browser: the Logs page (a record logged after it
// opened arrives live), Skills (a skill's Markdown rendered, its problems
// with file:line), MCP servers (the restart button) and Channels (a failing
// channel's error) — hostile text in a log line, a skill, an MCP tool's
// description and a channel's error shown as the text it is, no script run,
// no CSP violation, no secret on any page; each page reached from the
// navigation.
func TestBrowserOpsPages(t *testing.T) {
	flaky := failingChannel{name: "flaky", err: errors.New("dial https://bot:hunter22@chat.example/ws as " + opsPGPass + ": " + opsHostile)}
	r := startConsole(t, cOptions{Extra: opsExtra + mcpExtra(startMCPServer(t, "Look up "+opsHostile+" in the graph.")),
		Channels: []channels.Channel{flaky}})
	r.secrets = slices.DeleteFunc(r.secrets, func(s string) bool { return s == cLLMKey }) // logged on purpose below
	skill := filepath.Join(r.dir, "skills", "triage", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(skill), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, []byte("---\nname: triage\ndescription: Sort "+opsHostile+" issues.\n---\n"+
		"## Steps\n\n- read **all** of it\n\n<script>alert(1)</script>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(r.dir, "skills", "bad", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("---\nname: bad\n---\n"+opsHostile+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cEventually(t, "kg ready", func() bool { _, st := mcpRestarts(r, "kg"); return st == "ready" })
	cEventually(t, "a restart of the failing channel", func() bool { return r.d.ChannelStates()["flaky"].Restarts >= 1 })

	p := browser.Start(t, browser.Options{Timeout: cWait})
	p.Login(r.base, cAdminToken)
	secrets := opsSecrets(r)
	check := func(page string) {
		t.Helper()
		if n := p.Count(`main img, main script, [onerror]`); n != 0 {
			t.Errorf("%s: %d element(s) from hostile text: the text became markup", page, n)
		}
		p.NoScriptRan()
		html := p.Eval(`document.documentElement.outerHTML`)
		for _, s := range append(secrets, "hunter22") {
			if strings.Contains(html, s) {
				t.Fatalf("%s shows a secret (%d chars, starts %q)", page, len(s), s[:4])
			}
		}
	}
	nav := func(label, path string) {
		t.Helper()
		p.ClickAndLoad(`nav a[href="` + path + `"]`)
		if loc := p.Location(); !strings.HasSuffix(loc, path) {
			t.Fatalf("the %s link led to %s", label, loc)
		}
	}

	t.Run("logs", func(t *testing.T) {
		nav("Logs", "/ui/logs")
		p.Select("#logs-level", "warn")
		p.ClickAndLoad("#logs-filter button")
		p.WaitVisible("#log-lines")
		r.d.Logger().Warn("browser-live-marker "+opsHostile, "key", cLLMKey, "dsn", "postgres://sb:"+opsPGPass+"@h/db")
		r.d.Logger().Info("browser-info-marker")
		p.WaitText("#log-lines .log-text", "browser-live-marker "+opsHostile) // arrived live, as text
		if txt := p.Text("#log-lines"); strings.Contains(txt, "browser-info-marker") || !strings.Contains(txt, "[redacted]") {
			t.Errorf("the live tail ignores the filter or shows no redaction: %q", txt)
		}
		check("the Logs page")
	})
	t.Run("skills", func(t *testing.T) {
		nav("Skills", "/ui/skills")
		if rows := tableRows(p, "#skills"); !strings.Contains(rows, "triage|Sort "+opsHostile+" issues.") {
			t.Errorf("skills table:\n%s", rows)
		}
		if probs := p.Text("#skill-problems"); !strings.Contains(probs, "bad/SKILL.md:") {
			t.Errorf("problems: %q", probs)
		}
		check("the Skills page")
		p.ClickAndLoad(`a[href="/ui/skills/show?name=triage"]`)
		p.WaitVisible("#skill-body h2")
		if n := p.Count("#skill-body strong"); n != 1 {
			t.Errorf("the skill's Markdown is not rendered (%d <strong>)", n)
		}
		check("the skill's page")
	})
	t.Run("mcp", func(t *testing.T) {
		nav("MCP", "/ui/mcp")
		if d := p.Text(`[data-server="kg"] .tool-desc`); d != "Look up "+opsHostile+" in the graph." {
			t.Errorf("the tool's description shows as %q", d)
		}
		check("the MCP page")
		p.ClickAndLoad(`[data-server="kg"] .mcp-restart button`)
		p.WaitText("#flash", "Restarting MCP server kg.")
		cEventually(t, "kg restarted", func() bool { n, st := mcpRestarts(r, "kg"); return n == 1 && st == "ready" })
	})
	t.Run("channels", func(t *testing.T) {
		nav("Channels", "/ui/channels")
		got := p.Text(`[data-channel="flaky"] .channel-error`)
		if !strings.Contains(got, "dial https://bot:[redacted]@chat.example/ws as [redacted]: "+opsHostile) {
			t.Errorf("the channel's error shows as %q", got)
		}
		if href := p.Eval(`document.querySelector('[data-channel="telegram"] a').getAttribute("href")`); href != "/ui/config?key=channels.telegram.enabled#config-key-form" {
			t.Errorf("telegram's settings link = %q", href)
		}
		check("the Channels page")
	})
}
