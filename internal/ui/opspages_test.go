package ui_test

// Issue 34, item 4: the Logs, Skills, MCP servers and Channels pages over
// HTTP against the real daemon — secrets scrubbed, hostile text shown as
// text, CSRF on the restart button, a login required.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/channels"
)

const (
	// opsHostile is markup a log line, a skill, an MCP server or a channel
	// error may carry; every page must show it as text.
	opsHostile = `<img src=x onerror=alert(1)>`
	// opsPGPass and opsMCPHeader are secrets written in plain text in the
	// config file (not ${ENV}); the tests log them on purpose, so they are
	// not among the rig's secrets the daemon's own log is checked for.
	opsPGPass    = "pg-ops-secret-pass-0077"
	opsMCPHeader = "Bearer mcp-hdr-secret-0088"
)

// opsExtra writes both plain-text secrets into the config.
const opsExtra = "storage:\n  postgres:\n    url: postgres://sb:" + opsPGPass + "@127.0.0.1:5432/sb\n"

// opsSecrets are every secret the pages must never show.
func opsSecrets(r *cRig) []string {
	return append(slices.Clone(r.secrets), opsPGPass, opsMCPHeader, cLLMKey)
}

func noSecretIn(t *testing.T, what, body string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(body, s) {
			t.Errorf("%s shows a secret (%d chars, starts %q)", what, len(s), s[:4])
		}
	}
}

// inert fails when hostile markup got through as markup.
func inert(t *testing.T, what, body string) {
	t.Helper()
	if strings.Contains(body, "<img src=x") || strings.Contains(body, "<script>alert") || strings.Contains(body, `href="javascript:`) {
		t.Errorf("%s renders hostile text as markup", what)
	}
}

// The Logs page: the daemon's log tail, newest first, filtered by level
// with a GET form, every configured secret (from ${ENV} or written in
// plain text, a database URL's password) and URL credentials scrubbed, log
// text escaped; and live: a record logged after the page opened arrives
// over the event stream, scrubbed too.
func TestLogsPageTailLevelsRedactionLive(t *testing.T) {
	r := startConsole(t, cOptions{Extra: opsExtra + mcpExtra(startMCPServer(t, "Look things up."))})
	// This test logs the model's key on purpose (the page must scrub it).
	r.secrets = slices.DeleteFunc(r.secrets, func(s string) bool { return s == cLLMKey })
	log := r.d.Logger()
	log.Debug("marker-debug")
	log.Info("marker-info")
	log.Warn("upstream answered "+opsHostile, "body", "key="+cLLMKey+" header="+opsMCPHeader,
		"dsn", "postgres://sb:"+opsPGPass+"@127.0.0.1/sb", "url", "https://api.example.com/x?token=abcdef1234567890")
	log.Error("marker-error <script>alert(1)</script>")
	c := newClient(t, r.base)
	c.login(cAdminToken)
	for _, tt := range []struct {
		query     string
		want, not []string
	}{
		{"", []string{"marker-info", "upstream answered", "marker-error", "[redacted]", "token=[redacted]"}, []string{"marker-debug"}},
		{"?level=debug", []string{"marker-debug", "marker-info", "marker-error"}, nil},
		{"?level=warn", []string{"upstream answered", "marker-error"}, []string{"marker-info", "marker-debug"}},
		{"?level=error", []string{"marker-error"}, []string{"upstream answered", "marker-info"}},
		{"?level=bogus", []string{"marker-info"}, []string{"marker-debug"}},
	} {
		got := c.get("/ui/logs" + tt.query)
		if got.Code != http.StatusOK {
			t.Fatalf("/ui/logs%s = %d\n%s", tt.query, got.Code, got.Body)
		}
		for _, w := range tt.want {
			if !strings.Contains(got.Body, w) {
				t.Errorf("/ui/logs%s lacks %q", tt.query, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(got.Body, n) {
				t.Errorf("/ui/logs%s shows %q, below the level", tt.query, n)
			}
		}
		noSecretIn(t, "/ui/logs"+tt.query, got.Body, opsSecrets(r))
		inert(t, "/ui/logs"+tt.query, got.Body)
	}
	page := c.get("/ui/logs?level=warn").Body
	if !strings.Contains(page, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the hostile log text is not shown as text")
	}
	if i, j := strings.Index(page, "marker-error"), strings.Index(page, "upstream answered"); i < 0 || j < 0 || i > j {
		t.Error("the newest record is not first")
	}

	events := c.stream("/ui/live/logs?level=warn")
	nextEvent(t, events, "logs") // the tail as it is
	log.Warn("live-marker " + opsHostile + " " + cLLMKey)
	for {
		ev := nextEvent(t, events, "logs")
		if !strings.Contains(ev.Data, "live-marker") {
			continue
		}
		noSecretIn(t, "the live logs event", ev.Data, opsSecrets(r))
		inert(t, "the live logs event", ev.Data)
		if strings.Contains(ev.Data, "marker-info") {
			t.Error("the live event ignores the level filter")
		}
		break
	}
}

// The Skills page lists the valid skills of skills.dir and the invalid
// files with file:line; a skill's page renders its Markdown sanitized.
func TestSkillsPageListsSkillsAndProblems(t *testing.T) {
	r := startConsole(t, cOptions{})
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(r.dir, "skills", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("release-notes/SKILL.md", "---\nname: release-notes\ndescription: Write notes "+opsHostile+"\n---\n"+
		"# Release notes\n\n1. Group the **changes**.\n\n<script>alert(1)</script>\n\n[click](javascript:alert(1))\n")
	write("broken/SKILL.md", "---\nname: broken\ndescription: [unclosed\n---\nbody\n")
	write("wrongname/SKILL.md", "---\nname: other\ndescription: The folder says otherwise.\n---\nbody\n")
	c := newClient(t, r.base)
	c.login(cAdminToken)
	got := c.get("/ui/skills")
	if got.Code != http.StatusOK {
		t.Fatalf("/ui/skills = %d\n%s", got.Code, got.Body)
	}
	if !strings.Contains(got.Body, `href="/ui/skills/show?name=release-notes"`) ||
		!strings.Contains(got.Body, "Write notes &lt;img src=x onerror=alert(1)&gt;") {
		t.Errorf("the valid skill is not listed with its description as text:\n%s", got.Body)
	}
	for _, re := range []string{`broken/SKILL.md:\d+: `, `wrongname/SKILL.md:2: `} {
		if !regexp.MustCompile(re).MatchString(got.Body) {
			t.Errorf("the problems lack %s:\n%s", re, got.Body)
		}
	}
	inert(t, "/ui/skills", got.Body)
	show := c.get("/ui/skills/show?name=release-notes")
	if show.Code != http.StatusOK || !strings.Contains(show.Body, "<h1>Release notes</h1>") ||
		!strings.Contains(show.Body, "<strong>changes</strong>") {
		t.Errorf("the skill's page = %d, want its Markdown rendered:\n%s", show.Code, show.Body)
	}
	inert(t, "the skill's page", show.Body)
	if got := c.get("/ui/skills/show?name=broken"); got.Code != http.StatusNotFound {
		t.Errorf("an invalid skill's page = %d, want 404", got.Code)
	}
}

// startMCPServer is a Streamable HTTP MCP server with one tool whose
// description is desc.
func startMCPServer(t *testing.T, desc string) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "kg", Version: "1"}, nil)
	type in struct {
		Q string `json:"q"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "lookup", Description: desc},
		func(context.Context, *sdk.CallToolRequest, in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found"}}}, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

func mcpExtra(url string) string {
	return "mcp:\n  servers:\n    kg:\n      url: " + url + "\n      headers:\n        Authorization: " + opsMCPHeader +
		"\n    dormant:\n      enabled: false\n      command: /bin/false\n"
}

// mcpRestarts is server name's restart count and state.
func mcpRestarts(r *cRig, name string) (int, string) {
	for _, st := range r.d.MCPStatus() {
		if st.Name == name {
			return st.Restarts, string(st.State)
		}
	}
	return -1, ""
}

// The MCP page shows each server's state and tools (descriptions as text),
// the disabled ones as such; Restart needs the CSRF token, restarts the
// server and is audited; an unknown name is refused with a clear message.
func TestMCPPageAndRestart(t *testing.T) {
	r := startConsole(t, cOptions{Extra: mcpExtra(startMCPServer(t, "Look up "+opsHostile+" in the graph."))})
	c := newClient(t, r.base)
	c.login(cAdminToken)
	cEventually(t, "kg ready", func() bool { _, st := mcpRestarts(r, "kg"); return st == "ready" })
	got := c.get("/ui/mcp")
	if got.Code != http.StatusOK {
		t.Fatalf("/ui/mcp = %d\n%s", got.Code, got.Body)
	}
	for _, want := range []string{`data-server="kg"`, "kg__lookup", "Look up &lt;img src=x onerror=alert(1)&gt; in the graph.",
		"not in agent.tools", `action="/ui/mcp/restart"`, `data-server="dormant"`, "disabled"} {
		if !strings.Contains(got.Body, want) {
			t.Errorf("/ui/mcp lacks %q", want)
		}
	}
	inert(t, "/ui/mcp", got.Body)
	noSecretIn(t, "/ui/mcp", got.Body, opsSecrets(r))

	if got := c.post("/ui/mcp/restart", url.Values{"csrf": {""}, "name": {"kg"}}); got.Code != http.StatusForbidden {
		t.Errorf("restart without a CSRF token = %d, want 403", got.Code)
	}
	if n, _ := mcpRestarts(r, "kg"); n != 0 {
		t.Fatalf("the server restarted %d time(s) on a refused request", n)
	}
	res := c.post("/ui/mcp/restart", url.Values{"name": {"kg"}})
	if res.Code != http.StatusSeeOther || res.Header.Get("Location") != "/ui/mcp" {
		t.Fatalf("restart = %d → %q", res.Code, res.Header.Get("Location"))
	}
	cEventually(t, "kg restarted and ready", func() bool { n, st := mcpRestarts(r, "kg"); return n == 1 && st == "ready" })
	after := c.get("/ui/mcp").Body
	if !strings.Contains(after, "Restarting MCP server kg.") || !strings.Contains(after, "1 restart(s)") {
		t.Errorf("after the restart the page lacks the flash or the count:\n%s", after)
	}
	c.post("/ui/mcp/restart", url.Values{"name": {"nope"}})
	if body := c.get("/ui/mcp").Body; !strings.Contains(body, "Not restarted: no running MCP server") {
		t.Errorf("an unknown server's restart is not refused clearly:\n%s", body)
	}
	if audit := c.get("/ui/audit").Body; strings.Count(audit, "mcp.restart") < 2 {
		t.Errorf("the restarts are not audited:\n%s", audit)
	}
}

// failingChannel stops at once with err, every time it is run.
type failingChannel struct {
	name string
	err  error
}

func (f failingChannel) Name() string                                            { return f.name }
func (f failingChannel) Run(context.Context, channels.Sink) error                { return f.err }
func (f failingChannel) Send(context.Context, channels.Outgoing) (string, error) { return "", f.err }
func (f failingChannel) Format(md string) []channels.Chunk                       { return []channels.Chunk{{Text: md}} }

// The Channels page: every platform of the registry (enabled or off), the
// running ones' state, reconnects and last error — a failing channel's
// error redacted (URL credentials, a config secret) and shown as text —
// and a link to the config editor at the platform's section.
func TestChannelsPageStatesErrorsAndSettings(t *testing.T) {
	flaky := failingChannel{name: "flaky", err: errors.New("dial https://bot:hunter22@chat.example/ws as " + opsPGPass + ": " + opsHostile)}
	r := startConsole(t, cOptions{Telegram: true, Extra: opsExtra, Channels: []channels.Channel{flaky}})
	cEventually(t, "two restarts of the failing channel", func() bool { return r.d.ChannelStates()["flaky"].Restarts >= 2 })
	cEventually(t, "telegram ready", func() bool { return r.d.ChannelStates()["telegram"].Ready })
	c := newClient(t, r.base)
	c.login(cAdminToken)
	got := c.get("/ui/channels")
	if got.Code != http.StatusOK {
		t.Fatalf("/ui/channels = %d\n%s", got.Code, got.Body)
	}
	row := func(name string) string {
		i := strings.Index(got.Body, `data-channel="`+name+`"`)
		if i < 0 {
			t.Fatalf("no row for %s:\n%s", name, got.Body)
		}
		j := strings.Index(got.Body[i:], "</tr>")
		return got.Body[i : i+j]
	}
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"telegram", []string{">yes<", ">ready<", `href="/ui/config?key=channels.telegram.enabled#config-key-form"`}},
		{"discord", []string{">no<", ">off<", `href="/ui/config?key=channels.discord.enabled`}},
		{"matrix", []string{">off<"}},
		{"flaky", []string{"dial https://bot:[redacted]@chat.example/ws as [redacted]: &lt;img src=x onerror=alert(1)&gt;"}},
	} {
		rw := row(tt.name)
		for _, w := range tt.want {
			if !strings.Contains(rw, w) {
				t.Errorf("the %s row lacks %q:\n%s", tt.name, w, rw)
			}
		}
	}
	if !regexp.MustCompile(`class="channel-state [a-z]+">(failed|connecting)<`).MatchString(row("flaky")) ||
		!regexp.MustCompile(`<td>([2-9]|\d\d+)</td>`).MatchString(row("flaky")) {
		t.Errorf("the failing channel's state or reconnects:\n%s", row("flaky"))
	}
	noSecretIn(t, "/ui/channels", got.Body, append(opsSecrets(r), "hunter22"))
	inert(t, "/ui/channels", got.Body)
}

// Without a session the new pages send the browser to the login page (the
// live stream and the restart answer 401), and nothing restarts.
func TestOpsPagesNeedALogin(t *testing.T) {
	r := startConsole(t, cOptions{})
	c := newClient(t, r.base)
	for _, p := range []string{"/ui/logs", "/ui/logs?level=debug", "/ui/skills", "/ui/skills/show?name=x", "/ui/mcp", "/ui/channels"} {
		got := c.get(p)
		if loc := got.Header.Get("Location"); got.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?next=") {
			t.Errorf("GET %s without a session = %d → %q, want the login page", p, got.Code, loc)
		}
	}
	if got := c.get("/ui/live/logs"); got.Code != http.StatusUnauthorized {
		t.Errorf("the live log stream without a session = %d, want 401", got.Code)
	}
	if got := c.post("/ui/mcp/restart", url.Values{"csrf": {""}, "name": {"kg"}}); got.Code != http.StatusUnauthorized {
		t.Errorf("restart without a session = %d, want 401", got.Code)
	}
}
