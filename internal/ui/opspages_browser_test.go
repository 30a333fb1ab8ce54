package ui_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
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

// The look of the Logs, Skills, MCP servers and Channels pages with plain
// content (TestBrowserOpsPages fills them with hostile text): each shows
// what it is for, no secret, no script run; with SWITCHBOARD_SCREENSHOTS=1
// the pictures for the README are taken here.
func TestBrowserOpsPagesLook(t *testing.T) {
	matrix := &recoveringChannel{failingChannel: failingChannel{name: "matrix",
		err: errors.New("sync https://bot:" + opsPGPass + "@matrix.example/_matrix/client/v3/sync: 502 Bad Gateway")}, fails: 3}
	r := startConsole(t, cOptions{Extra: opsExtra + mcpExtra(startMCPServer(t, "Look up an entity and its relations in the knowledge graph.")),
		Channels: []channels.Channel{matrix}})
	r.secrets = slices.DeleteFunc(r.secrets, func(s string) bool { return s == cLLMKey }) // logged on purpose below
	for name, text := range map[string]string{
		"triage":        "---\nname: triage\ndescription: Sort new issues by area and urgency.\n---\n## Steps\n\n- read **all** of it\n",
		"release-notes": "---\nname: release-notes\ndescription: Draft release notes from the merged pull requests.\n---\nGroup by feature, fix and chore.\n",
		"standup":       "---\nname: standup\n---\nSummarize yesterday.\n",
	} {
		file := filepath.Join(r.dir, "skills", name, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cEventually(t, "kg ready", func() bool { _, st := mcpRestarts(r, "kg"); return st == "ready" })
	cEventually(t, "the channel back after its failures", func() bool { return r.d.ChannelStates()["matrix"].Restarts >= matrix.fails })
	log := r.d.Logger()
	log.Info("message received", "chat", "telegram:42", "chars", 58)
	log.Warn("model call failed, retrying", "attempt", 1, "key", cLLMKey, "err", "429 Too Many Requests")
	log.Info("tool call", "chat", "telegram:42", "tool", "kg__lookup", "duration", "38ms")
	log.Info("turn finished", "chat", "telegram:42", "tokens", 1834, "duration", "2.4s")
	log.Info("delivered", "chat", "telegram:42", "parts", 1)
	log.Info("job ran", "job", "morning-digest", "duration", "3.1s")

	p := browser.Start(t, browser.Options{Timeout: cWait})
	p.Login(r.base, cAdminToken)
	secrets := opsSecrets(r)
	for _, c := range []struct{ name, path, sel, text string }{
		{"logs", "/ui/logs", "#log-lines .log-text", "model call failed, retrying"},
		{"skills", "/ui/skills", "#skills", "Draft release notes from the merged pull requests."},
		{"mcp", "/ui/mcp", `[data-server="kg"] .tool-desc`, "Look up an entity"},
		{"channels", "/ui/channels", `[data-channel="matrix"] .channel-error`, "502 Bad Gateway"},
	} {
		p.Navigate(r.base + c.path)
		p.WaitText(c.sel, c.text)
		p.NoScriptRan()
		html := p.Eval(`document.documentElement.outerHTML`)
		for _, s := range secrets {
			if strings.Contains(html, s) {
				t.Fatalf("%s shows a secret (%d chars, starts %q)", c.path, len(s), s[:4])
			}
		}
		r.screenshot(p, c.name)
	}
}

// recoveringChannel fails its first fails runs, then runs until stopped.
type recoveringChannel struct {
	failingChannel
	fails int
	runs  atomic.Int32
}

func (c *recoveringChannel) Run(ctx context.Context, _ channels.Sink) error {
	if int(c.runs.Add(1)) <= c.fails {
		return c.err
	}
	<-ctx.Done()
	return nil
}

// screenshot writes docs/screenshots/name.png when SWITCHBOARD_SCREENSHOTS=1
// (as rig.screenshot, for the console rig's browser tests).
func (r *cRig) screenshot(p *browser.Page, name string) {
	r.t.Helper()
	if os.Getenv(envScreenshots) != "1" {
		return
	}
	p.Screenshot(filepath.Join("..", "..", "docs", "screenshots", name+".png"))
}
