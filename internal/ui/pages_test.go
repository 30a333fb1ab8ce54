package ui_test

// The console's pages over HTTP against the real daemon: what an operator
// sees and what their edits do on disk.

import (
	"bytes"
	"context"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// chatTurn posts text in web conversation conv and waits until the turn is
// in the store.
func chatTurn(t *testing.T, r *cRig, conv, text string) {
	t.Helper()
	ch := r.d.WebChannel()
	if ch == nil {
		t.Fatal("no web channel")
	}
	cEventually(t, "the web channel running", ch.Ready)
	if _, err := ch.Post(context.Background(), conv, "operator", text); err != nil {
		t.Fatal(err)
	}
	cEventually(t, "the turn of web:"+conv+" in the store", func() bool {
		turns, err := r.d.Store().SessionTurns(context.Background(), "web:"+conv)
		return err == nil && len(turns) > 0 && turns[len(turns)-1].Answer != ""
	})
}

func TestUserAndModelTextRenderInert(t *testing.T) {
	const answer = "Here: [click](javascript:alert(1)) and [ok](https://example.com/a) " +
		"<script>alert(2)</script> ![px](http://tracker.example/p.png) <img src=y onerror=alert(3)>"
	r := startConsole(t, cOptions{LLM: fakellm.Text(answer)})
	chatTurn(t, r, "xss", `<img src=x onerror=alert(1)>`)
	c := newClient(t, r.base)
	c.login(cAdminToken)
	for _, path := range []string{"/ui/sessions/show?key=web:xss", "/ui/chat?conv=xss", "/ui/audit"} {
		page := c.get(path)
		if page.Code != http.StatusOK {
			t.Fatalf("%s = %d", path, page.Code)
		}
		for _, bad := range []string{"<img src=x", "<img src=y", "<script>alert", `href="javascript:`, `src="http://tracker`} {
			if strings.Contains(page.Body, bad) {
				t.Errorf("%s contains %q", path, bad)
			}
		}
		if tagWithHandler.MatchString(page.Body) {
			t.Errorf("%s has a tag with an event handler: %s", path, tagWithHandler.FindString(page.Body))
		}
		if path == "/ui/audit" {
			continue
		}
		if !strings.Contains(page.Body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("%s does not show the user's text as text", path)
		}
		if !strings.Contains(page.Body, `<a href="https://example.com/a" rel="noopener noreferrer nofollow">ok</a>`) {
			t.Errorf("%s lost the safe link", path)
		}
		if !strings.Contains(page.Body, "Here: click and") {
			t.Errorf("%s dropped the text of the unsafe link:\n%s", path, page.Body)
		}
	}
}

func TestNoSecretInAnyPage(t *testing.T) {
	const dbPassword = "pg-very-secret-password-42"
	r := startConsole(t, cOptions{Telegram: true,
		Extra: "storage:\n  postgres:\n    url: postgres://sb:" + dbPassword + "@127.0.0.1:5432/sb\n"})
	r.secrets = append(r.secrets, dbPassword)
	tok, err := os.ReadFile(filepath.Join(r.dir, "data", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	r.secrets = append(r.secrets, strings.TrimSpace(string(tok)))
	chatTurn(t, r, "sec", "hello")
	c := newClient(t, r.base)
	c.login(cAdminToken)
	pages := []string{"/ui/", "/ui/chat?conv=sec", "/ui/sessions", "/ui/sessions/show?key=web:sec", "/ui/jobs",
		"/ui/personas", "/ui/personas/edit?name=assistant", "/ui/config", "/ui/pairing", "/ui/audit", "/ui/approvals"}
	for _, p := range pages {
		got := c.get(p)
		if got.Code != http.StatusOK {
			t.Errorf("%s = %d", p, got.Code)
		}
		for _, s := range r.secrets {
			if strings.Contains(got.Body, s) {
				t.Errorf("%s shows a secret (%d chars, starts %q)", p, len(s), s[:4])
			}
		}
	}
	cfg := c.get("/ui/config")
	if !strings.Contains(cfg.Body, "[redacted]") || strings.Contains(cfg.Body, `id="config-text"`) {
		t.Error("the config page should redact secrets and not offer a file with a plain-text secret whole")
	}
	if !strings.Contains(cfg.Body, "storage.postgres.url") {
		t.Error("the config page should name the key written in plain text")
	}
	// Editing a key of such a file: the diff shows no other line.
	prev := c.post("/ui/config/key", url.Values{"key": {"llm.model"}, "value": {"other-model"}})
	if prev.Code != http.StatusOK || strings.Contains(prev.Body, dbPassword) || !strings.Contains(prev.Body, "other-model") {
		t.Errorf("key preview = %d; it must show the change and no secret", prev.Code)
	}
	// A secret key's new value is never echoed back.
	const newToken = "tg-new-secret-token-0000000001"
	prev = c.post("/ui/config/key", url.Values{"key": {"channels.telegram.token"}, "value": {newToken}})
	if strings.Contains(prev.Body, newToken) {
		t.Error("the preview of a secret key shows its value")
	}
}

var tagWithHandler = regexp.MustCompile(`<[a-z]+[^>]*\son[a-z]+=`)

var fileLine = regexp.MustCompile(`config\.yaml:\d+`)

func TestConfigEditUnknownKeyIsRefusedAndNothingWritten(t *testing.T) {
	r := startConsole(t, cOptions{})
	before, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, r.base)
	c.login(cAdminToken)
	page := c.get("/ui/config")
	base := regexp.MustCompile(`name="base" value="([0-9a-f]+)"`).FindStringSubmatch(page.Body)
	if base == nil {
		t.Fatalf("the config page offers no file editor:\n%s", page.Body)
	}
	edited := strings.Replace(string(before), "  model: fake-model\n", "  model: fake-model\n  modle: typo\n", 1)
	for _, action := range []string{"preview", "apply"} {
		got := c.post("/ui/config/file", url.Values{"text": {edited}, "base": {base[1]}, "action": {action}})
		if got.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s of an unknown key = %d, want 422", action, got.Code)
		}
		if !fileLine.MatchString(got.Body) || !strings.Contains(got.Body, "modle") || !strings.Contains(got.Body, "nothing was written") {
			t.Errorf("%s: the page does not show file:line of the unknown key:\n%s", action, got.Body)
		}
	}
	got := c.post("/ui/config/key", url.Values{"key": {"llm.modle"}, "value": {"x"}, "action": {"apply"}})
	if got.Code != http.StatusUnprocessableEntity || !strings.Contains(got.Body, "did you mean") {
		t.Errorf("set of an unknown key = %d:\n%s", got.Code, got.Body)
	}
	got = c.post("/ui/config/key", url.Values{"key": {"personas.default"}, "value": {"nosuch"}, "action": {"apply"}})
	if got.Code != http.StatusUnprocessableEntity || !fileLine.MatchString(got.Body) {
		t.Errorf("a default persona that does not exist = %d:\n%s", got.Code, got.Body)
	}
	after, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the file changed on disk:\n%s", after)
	}
}

func TestConfigEditAppliesKeepingComments(t *testing.T) {
	r := startConsole(t, cOptions{Extra: "# operator's note: keep me\n"})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	prev := c.post("/ui/config/key", url.Values{"key": {"llm.model"}, "value": {"better-model"}, "action": {"preview"}})
	if diff := html.UnescapeString(prev.Body); prev.Code != http.StatusOK || !strings.Contains(diff, "-   model: fake-model</span>\n<span class=\"dadd\">+   model: better-model") {
		t.Fatalf("preview = %d, want a diff:\n%s", prev.Code, prev.Body)
	}
	if data, _ := os.ReadFile(r.path); strings.Contains(string(data), "better-model") {
		t.Fatal("the preview wrote the file")
	}
	got := c.post("/ui/config/key", url.Values{"key": {"llm.model"}, "value": {"better-model"}, "action": {"apply"}})
	if got.Code != http.StatusSeeOther {
		t.Fatalf("apply = %d:\n%s", got.Code, got.Body)
	}
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "model: better-model") || !strings.Contains(string(data), "# operator's note: keep me") {
		t.Errorf("the file after the edit:\n%s", data)
	}
	page := c.get("/ui/config")
	if !strings.Contains(page.Body, "better-model") || !strings.Contains(page.Body, "config reloaded") {
		t.Errorf("the page does not show the applied, reloaded config")
	}
}

func TestPersonaEditIsValidated(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	file := filepath.Join(r.dir, "personas", "pirate.md")
	bad := "---\ndescription: Talks like a pirate\ntemperature: hot\n---\nYou are a pirate.\n"
	got := c.post("/ui/personas/save", url.Values{"name": {"pirate"}, "new": {"1"}, "text": {bad}})
	if got.Code != http.StatusUnprocessableEntity || !strings.Contains(got.Body, file+":3:") {
		t.Fatalf("an invalid persona = %d, want the error at %s:3:\n%s", got.Code, file, got.Body)
	}
	if _, err := os.Stat(file); err == nil {
		t.Fatal("the invalid persona was written")
	}
	badTool := "---\ndescription: Talks like a pirate\ntools: [current_time, plunder]\n---\nYou are a pirate.\n"
	if got := c.post("/ui/personas/save", url.Values{"name": {"pirate"}, "new": {"1"}, "text": {badTool}}); !strings.Contains(got.Body, file+":3:") {
		t.Errorf("an unknown tool is not shown at its line:\n%s", got.Body)
	}
	good := "---\ndescription: Talks like a pirate\n---\nYou are a pirate.\n"
	if got := c.post("/ui/personas/save", url.Values{"name": {"pirate"}, "new": {"1"}, "text": {good}}); got.Code != http.StatusSeeOther {
		t.Fatalf("a valid persona = %d:\n%s", got.Code, got.Body)
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != good {
		t.Fatalf("the persona file = %q, %v", data, err)
	}
	if list := c.get("/ui/personas"); !strings.Contains(list.Body, "Talks like a pirate") {
		t.Error("the reloaded personas do not include the new one")
	}
}

func TestOverviewAndSessions(t *testing.T) {
	r := startConsole(t, cOptions{LLM: cToolThenAnswer("The time is now.")})
	chatTurn(t, r, "ov", "what time is it?")
	c := newClient(t, r.base)
	c.login(cAdminToken)
	home := c.get("/ui/")
	for _, want := range []string{`data-channel="web"`, "connected", "fake-model", `<svg class="chart"`, `id="turns-per-minute">1<`} {
		if !strings.Contains(home.Body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	live := nextEvent(t, c.stream("/ui/live/overview"), "overview")
	if !strings.Contains(live.Data, `data-channel="web"`) {
		t.Errorf("the live overview event lacks the channels:\n%s", live.Data)
	}
	list := c.get("/ui/sessions?q=web:ov")
	if !strings.Contains(list.Body, ">web:ov</a>") {
		t.Errorf("the search does not list web:ov:\n%s", list.Body)
	}
	show := c.get("/ui/sessions/show?key=web:ov")
	for _, want := range []string{"what time is it?", "tool <code>current_time</code>", "The time is now.", "tool current_time"} {
		if !strings.Contains(show.Body, want) {
			t.Errorf("the session page lacks %q", want)
		}
	}
	exp := c.get("/ui/sessions/export?key=web:ov")
	if exp.Code != http.StatusOK || !strings.Contains(exp.Body, `"switchboard.session.v1"`) {
		t.Errorf("export = %d", exp.Code)
	}
	if got := c.post("/ui/sessions/reset", url.Values{"key": {"web:ov"}}); got.Code != http.StatusSeeOther {
		t.Fatalf("reset = %d", got.Code)
	}
	if show := c.get("/ui/sessions/show?key=web:ov"); !strings.Contains(show.Body, "archived") || strings.Contains(show.Body, "what time is it?") {
		t.Error("after the reset the session still shows its conversation")
	}
}

// TestPersonaEditInTwoTabsLosesNoSave: two editors opened on the same
// persona; the second save, based on the text before the first, is refused
// (its text kept in the editor) instead of silently overwriting the first.
func TestPersonaEditInTwoTabsLosesNoSave(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	file := filepath.Join(r.dir, "personas", "assistant.md")
	base := regexp.MustCompile(`name="base" value="([0-9a-f]*)"`)
	var bases []string // what each tab's form sends along (nothing if it has no such field)
	for range 2 {
		m := base.FindStringSubmatch(c.get("/ui/personas/edit?name=assistant").Body)
		if m == nil {
			m = []string{"", ""}
		}
		bases = append(bases, m[1])
	}
	first := "---\ndescription: First tab\n---\nYou are the first tab's assistant.\n"
	second := "---\ndescription: Second tab\n---\nYou are the second tab's assistant.\n"
	if got := c.post("/ui/personas/save", url.Values{"name": {"assistant"}, "base": {bases[0]}, "text": {first}}); got.Code != http.StatusSeeOther {
		t.Fatalf("the first save = %d:\n%s", got.Code, got.Body)
	}
	got := c.post("/ui/personas/save", url.Values{"name": {"assistant"}, "base": {bases[1]}, "text": {second}})
	if got.Code != http.StatusUnprocessableEntity || !strings.Contains(got.Body, "changed since") {
		t.Errorf("the second save, based on the old text = %d, want 422 saying the file changed:\n%s", got.Code, got.Body)
	}
	if !strings.Contains(got.Body, "second tab&#39;s assistant") {
		t.Error("the refused text is not kept in the editor")
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != first {
		t.Errorf("%s = %q, %v; want the first save kept", file, data, err)
	}
}
