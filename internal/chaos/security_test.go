package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// botMessages returns what the bot posted in each platform chat of the
// harness chat number.
func botMessages(p *loadtest.Platforms, chat int) []string {
	var out []string
	switch loadtest.PlatformOf(chat) {
	case loadtest.Telegram:
		for _, m := range p.Telegram.Sent(loadtest.TelegramChatID(chat)) {
			out = append(out, m.Plain)
		}
	case loadtest.Discord:
		for _, m := range p.Discord.Sent(loadtest.DiscordChannelID(chat)) {
			out = append(out, m.Content)
		}
	case loadtest.Slack:
		for _, m := range p.Slack.Posted(fakeslack.DMChannel(loadtest.SlackUserID(chat))) {
			out = append(out, m.Text)
		}
	}
	return out
}

// modelSaw reports which tokens reached the model.
func modelSaw(p *loadtest.Platforms) string {
	var b strings.Builder
	for _, r := range p.LLM.Requests() {
		b.Write(r.Raw)
	}
	return b.String()
}

// groupMentions has a stranger mention the bot in a group on each platform.
func groupMentions(p *loadtest.Platforms, text string) {
	p.Telegram.UserSays(-1001234, "@switchboard_bot "+text, faketelegram.InSupergroup("team"),
		faketelegram.From(faketelegram.User{ID: 4242, FirstName: "Mallory"}))
	p.Discord.AddGuild("700", "guild")
	p.Discord.AddChannel("700", "701", "general")
	p.Discord.UserSays("701", "4243", "<@"+p.Discord.BotID()+"> "+text, fakediscord.SayOptions{GuildID: "700"})
	p.Slack.UserMentions("C0GROUP", "UMALLORY", text)
}

func groupBotMessages(p *loadtest.Platforms) []string {
	var out []string
	for _, m := range p.Telegram.Sent(-1001234) {
		out = append(out, "telegram: "+m.Plain)
	}
	for _, m := range p.Discord.Sent("701") {
		out = append(out, "discord: "+m.Content)
	}
	for _, m := range p.Slack.Posted("C0GROUP") {
		out = append(out, "slack: "+m.Text)
	}
	return out
}

// TestAllowlistStrangersNeverReachModel: in allowlist mode, messages from
// users not on the list — in direct chats and as group mentions, on every
// platform — never reach the model and get no answer at all (no pairing code
// either), while the allowed user is answered.
func TestAllowlistStrangersNeverReachModel(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	allowed := 0 // Telegram chat 0: user 500000
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{AccessMode: "allowlist",
		AllowFrom: []string{fmt.Sprintf("telegram:user:%d", loadtest.TelegramChatID(allowed))}})
	r.start()
	strangers := []int{1, 2, 3, 4, 5}
	for _, c := range strangers {
		r.p.Say(c, "stranger "+loadtest.Token(c, 0))
	}
	groupMentions(r.p, "stranger in group q999x0z")
	ch := r.p.Expect(loadtest.Token(allowed, 0))
	r.p.Say(allowed, loadtest.Token(allowed, 0))
	if !arrived(ch) {
		t.Fatal("the allowed user got no answer")
	}
	r.awaitReceivedEverywhere(2)       // each platform: a direct message and a group mention
	time.Sleep(300 * time.Millisecond) // a wrong answer to a stranger would show now
	saw := modelSaw(r.p)
	for _, c := range strangers {
		if strings.Contains(saw, loadtest.Token(c, 0)) {
			t.Errorf("%s stranger's message reached the model", loadtest.PlatformOf(c))
		}
		if got := botMessages(r.p, c); len(got) > 0 {
			t.Errorf("%s stranger got %q in allowlist mode", loadtest.PlatformOf(c), got)
		}
	}
	if strings.Contains(saw, "q999x0z") {
		t.Error("a stranger's group mention reached the model")
	}
	if got := groupBotMessages(r.p); len(got) > 0 {
		t.Errorf("the bot answered strangers in groups: %q", got)
	}
	if n := r.p.LLM.RequestCount(); n != 1 {
		t.Errorf("model called %d times, want once (the allowed user)", n)
	}
}

// TestPairingCodesOnlyInDirectChats: in pairing mode a stranger's direct
// message gets a pairing code (and nothing reaches the model); a stranger's
// mention in a group gets nothing — a code is never posted where others read.
func TestPairingCodesOnlyInDirectChats(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{AccessMode: "pairing"})
	r.start()
	groupMentions(r.p, "let me in q998x0z")
	for c := range 3 {
		r.p.Say(c, "hello "+loadtest.Token(c, 0))
	}
	for c := range 3 {
		until(func() bool { return len(botMessages(r.p, c)) > 0 })
		got := botMessages(r.p, c)
		if len(got) != 1 || !strings.Contains(strings.ToLower(got[0]), "pairing") {
			t.Errorf("%s stranger's direct message: bot said %q, want one pairing code message", loadtest.PlatformOf(c), got)
		}
	}
	r.awaitReceivedEverywhere(2)       // each platform: a direct message and a group mention
	time.Sleep(300 * time.Millisecond) // a code posted in a group would show now
	if got := groupBotMessages(r.p); len(got) > 0 {
		t.Errorf("pairing code (or anything) posted in a group: %q", got)
	}
	if n := r.p.LLM.RequestCount(); n != 0 {
		t.Errorf("unpaired users reached the model %d times", n)
	}
}

// secrets are every secret value the daemon is given.
var secrets = map[string]string{
	"telegram token": loadtest.TelegramToken, "discord token": loadtest.DiscordToken,
	"slack bot token": loadtest.SlackBotToken, "slack app token": loadtest.SlackAppToken,
	"slack signing secret": loadtest.SlackSigning, "llm api key": loadtest.LLMKey,
	"telegram webhook secret": loadtest.TelegramWebhookSecret, "admin token": loadtest.AdminToken,
}

func scanForSecrets(t *testing.T, where, text string) {
	t.Helper()
	for name, v := range secrets {
		if strings.Contains(text, v) {
			t.Errorf("%s leaks the %s", where, name)
		}
		// Telegram tokens are "<bot id>:<secret>": the secret half alone is a leak too.
		if _, half, ok := strings.Cut(v, ":"); ok && len(half) > 8 && strings.Contains(text, half) {
			t.Errorf("%s leaks the secret part of the %s", where, name)
		}
	}
}

// TestSecretsNeverInOutput runs the daemon at debug level with every secret
// set, talks to it, asks /status as an admin, reads `config get`,
// `switchboard status`, the admin and metrics endpoints and `switchboard
// audit`, makes a platform reject the token, dumps all goroutines (SIGQUIT,
// as a crash would) and scans every byte of output, and the database file,
// for the secret values.
func TestSecretsNeverInOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	admin := fmt.Sprintf("telegram:user:%d", loadtest.TelegramChatID(0))
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{DataDir: dataDir, LogLevel: "debug",
		Admins: []string{admin}})
	proc := r.start()
	res := r.converse(context.Background(), 6, 1, 10*time.Second)
	if len(res.lost) > 0 {
		t.Fatalf("messages not answered: %v", res.lost)
	}
	r.p.Say(0, "/status")
	var status string
	until(func() bool {
		for _, m := range botMessages(r.p, 0) {
			if strings.Contains(m, "model") {
				status = m
			}
		}
		return status != ""
	})
	if status == "" {
		t.Fatalf("no /status answer; bot said %q", botMessages(r.p, 0))
	}
	scanForSecrets(t, "/status", status)

	cli := func(args ...string) string {
		cmd := exec.Command(r.bin, append([]string{"--config", r.cfg}, args...)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, r.p.Env()...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	for _, key := range []string{"llm.api_key", "channels.telegram.token", "channels.discord.token",
		"channels.slack.bot_token", "channels.slack.app_token", "channels.slack.signing_secret",
		"channels.telegram.webhook_secret", "server.admin_token", "channels.telegram", "llm"} {
		out := cli("config", "get", key)
		scanForSecrets(t, "config get "+key, out)
	}
	scanForSecrets(t, "config validate", cli("config", "validate"))
	statusOut := cli("status")
	if !strings.Contains(statusOut, "model") {
		t.Errorf("switchboard status: %q", statusOut)
	}
	scanForSecrets(t, "switchboard status", statusOut)
	for _, path := range []string{"/admin/status", "/metrics", "/readyz", "/admin/jobs", "/admin/pairing"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+loadtest.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		scanForSecrets(t, "GET "+path, string(body))
	}
	// A platform rejecting the token: adapters log the failure.
	r.p.Telegram.FailNext("sendMessage", 1, faketelegram.Failure{Code: 401, Description: "Unauthorized"})
	r.p.Say(3, "after 401 q3x9z")
	if !until(func() bool { return strings.Contains(r.output(), "delivery failed") }) {
		t.Errorf("the daemon did not log the rejected send; the scan would prove little")
	}

	// A crash dump: SIGQUIT makes the Go runtime print every goroutine.
	_ = proc.Cmd.Process.Signal(syscall.SIGQUIT)
	if !arrived(proc.Done()) {
		proc.Kill()
	}
	out := r.output()
	if !strings.Contains(out, "goroutine") {
		t.Errorf("no goroutine dump in the crash output")
	}
	if !strings.Contains(out, "level=DEBUG") {
		t.Errorf("the daemon did not log at debug level; the scan would prove little")
	}
	scanForSecrets(t, "daemon logs and crash output", out)
	scanForSecrets(t, "switchboard audit", cli("audit", "--limit", "1000"))
	scanForSecrets(t, "sessions list", cli("sessions", "list"))
	db, err := os.ReadFile(filepath.Join(dataDir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	scanForSecrets(t, "the database file", string(db))
}

// TestSlackSignatureForgeryRejected runs Slack on the Events API: requests
// without a signature, signed with the wrong secret, replayed with an old
// timestamp or with a body altered after signing are refused with 401 and
// never reach the model; a correctly signed event is answered.
func TestSlackSignatureForgeryRejected(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{SlackHTTP: true})
	r.start()
	url := "http://" + r.addr + "/webhooks/slack/events"
	event := func(tok string) []byte {
		m := fakeslack.Message{Channel: fakeslack.DMChannel("UFORGE"), ChannelType: "im", User: "UFORGE", Text: tok, TS: r.p.Slack.NextTS()}
		body, _ := r.p.Slack.EventCallback(m.Event())
		return body
	}
	post := func(req *http.Request) int {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	now := time.Now()
	forged := []struct {
		name string
		req  func() *http.Request
	}{
		{"unsigned", func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(event("q1x100z")))
			req.Header.Set("Content-Type", "application/json")
			return req
		}},
		{"wrong secret", func() *http.Request {
			return fakeslack.SignedRequest(url, "not-the-signing-secret", now, event("q1x101z"))
		}},
		{"replayed (10 minutes old)", func() *http.Request {
			return fakeslack.SignedRequest(url, loadtest.SlackSigning, now.Add(-10*time.Minute), event("q1x102z"))
		}},
		{"body altered after signing", func() *http.Request {
			req := fakeslack.SignedRequest(url, loadtest.SlackSigning, now, event("q1x103z"))
			altered := bytes.ReplaceAll(event("q1x103z"), []byte("q1x103z"), []byte("q1x104z"))
			req.Body = io.NopCloser(bytes.NewReader(altered))
			req.ContentLength = int64(len(altered))
			return req
		}},
	}
	for _, f := range forged {
		if code := post(f.req()); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", f.name, code)
		}
	}
	ch := r.p.Expect("q1x105z")
	if code := post(fakeslack.SignedRequest(url, loadtest.SlackSigning, now, event("q1x105z"))); code != http.StatusOK {
		t.Fatalf("correctly signed event: status %d, want 200", code)
	}
	if !arrived(ch) {
		t.Fatal("the correctly signed event was not answered")
	}
	saw := modelSaw(r.p)
	for _, tok := range []string{"q1x100z", "q1x101z", "q1x102z", "q1x103z", "q1x104z"} {
		if strings.Contains(saw, tok) {
			t.Errorf("forged event %s reached the model", tok)
		}
	}
}

// TestTelegramWebhookSecretEnforced runs Telegram in webhook mode: updates
// without the secret header or with a wrong one are refused (401) and never
// processed; the real secret's update is answered.
func TestTelegramWebhookSecretEnforced(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{TelegramWebhookURL: "https://bot.example.com/webhooks/telegram"})
	r.start()
	if _, secret := r.p.Telegram.Webhook(); secret != loadtest.TelegramWebhookSecret {
		t.Fatalf("setWebhook was not called with the configured secret")
	}
	url := "http://" + r.addr + "/webhooks/telegram"
	chat := loadtest.TelegramChatID(0)
	ctx := context.Background()
	for _, c := range []struct{ name, secret, tok string }{
		{"no secret", "", "q0x200z"},
		{"wrong secret", "guessed-secret", "q0x201z"},
		{"secret with a suffix", loadtest.TelegramWebhookSecret + "x", "q0x202z"},
	} {
		m := r.p.Telegram.NewMessage(chat, c.tok)
		code, err := r.p.Telegram.PostWebhook(ctx, url, c.secret, faketelegram.Update{Message: &m})
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", c.name, code)
		}
	}
	ch := r.p.Expect("q0x203z")
	m := r.p.Telegram.NewMessage(chat, "q0x203z")
	code, err := r.p.Telegram.PostWebhook(ctx, url, loadtest.TelegramWebhookSecret, faketelegram.Update{Message: &m})
	if err != nil || code != http.StatusOK {
		t.Fatalf("real secret: status %d, err %v", code, err)
	}
	if !arrived(ch) {
		t.Fatal("the update with the real secret was not answered")
	}
	saw := modelSaw(r.p)
	for _, tok := range []string{"q0x200z", "q0x201z", "q0x202z"} {
		if strings.Contains(saw, tok) {
			t.Errorf("refused update %s reached the model", tok)
		}
	}
}

// TestWebFetchRefusesPrivateAddresses: the model asks web_fetch for loopback
// and private addresses (including a loopback server that really listens);
// the tool refuses every one before connecting, and the refusal is what the
// model gets back.
func TestWebFetchRefusesPrivateAddresses(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	var hits atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "internal admin page")
	}))
	defer internal.Close()
	port := internal.Listener.Addr().(*net.TCPAddr).Port
	targets := []string{
		internal.URL + "/admin",
		fmt.Sprintf("http://localhost:%d/admin", port),
		fmt.Sprintf("http://[::1]:%d/", port),
		"http://10.0.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://192.168.1.1/",
		fmt.Sprintf("http://2130706433:%d/", port), // 127.0.0.1 as a decimal integer
	}
	var results atomic.Value
	results.Store([]string{})
	responder := func(req *fakellm.Request) fakellm.Response {
		tr := req.ToolResults()
		if len(tr) == 0 {
			var calls []fakellm.ToolCall
			for i, u := range targets {
				args, _ := json.Marshal(map[string]string{"url": u})
				calls = append(calls, fakellm.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "web_fetch", Arguments: string(args)})
			}
			return fakellm.Response{ToolCalls: calls}
		}
		var got []string
		for _, m := range tr {
			got = append(got, fakellm.MessageText(m))
		}
		results.Store(got)
		return fakellm.Response{Content: "done " + tokenOf(req.LastUserText())}
	}
	r := newRig(t, loadtest.ModelOptions{Responder: responder}, loadtest.ConfigOptions{Tools: []string{"web_fetch"}})
	r.start()
	ch := r.p.Expect(loadtest.Token(0, 0))
	r.p.Say(0, "fetch them "+loadtest.Token(0, 0))
	if !arrived(ch) {
		t.Fatalf("no answer; bot said %q\n%s", botMessages(r.p, 0), r.output())
	}
	got := results.Load().([]string)
	if len(got) != len(targets) {
		t.Fatalf("model got %d tool results for %d calls: %q", len(got), len(targets), got)
	}
	for i, res := range got {
		if !strings.Contains(strings.ToLower(res), "refus") {
			t.Errorf("web_fetch %s: result %q, want a refusal", targets[i], res)
		}
		if strings.Contains(res, "internal admin page") {
			t.Errorf("web_fetch %s returned the internal page", targets[i])
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server was contacted %d times", n)
	}
}
