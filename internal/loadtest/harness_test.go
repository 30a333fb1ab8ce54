package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunSmall runs the whole harness — real binary, three platforms — on a
// small load and checks what it reports is real: every message answered once,
// and every figure measured (not wall-clock limits: those are BENCHMARKS.md's).
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon binary")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := testBinary(t)
	rep, err := Run(ctx, Options{Bin: bin, Dir: dir, Chats: 9, Messages: 2, IdleSettle: 100 * time.Millisecond,
		ModelDelay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Answered != 18 || rep.Duplicates != 0 {
		t.Errorf("answered %d of 18 with %d duplicates", rep.Answered, rep.Duplicates)
	}
	if rep.ModelRequests != 18 {
		t.Errorf("%d model requests, want 18", rep.ModelRequests)
	}
	for name, v := range map[string]int64{"boot to ready": int64(rep.BootToReady), "idle RSS": rep.IdleRSSKiB,
		"load RSS": rep.LoadRSSKiB, "db bytes": rep.DBBytes, "p99": int64(rep.P99)} {
		if v <= 0 {
			t.Errorf("%s not measured", name)
		}
	}
	for _, pl := range []string{"telegram", "discord", "slack"} {
		if _, ok := rep.PerPlatform[pl]; !ok {
			t.Errorf("no latency figures for %s", pl)
		}
	}
	var b strings.Builder
	rep.Markdown(&b)
	if !strings.Contains(b.String(), "9 × 2 (18 answered, 0 duplicates)") {
		t.Errorf("report:\n%s", b.String())
	}
	t.Logf("\n%s", b.String())
}

// builtBinary is the daemon built once for the tests that run it
// (testBinary); TestMain removes it.
var builtBinary struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	if os.Getenv(ModelProcessEnv) != "" {
		RunModelProcess()
		return
	}
	code := m.Run()
	if builtBinary.dir != "" {
		os.RemoveAll(builtBinary.dir)
	}
	os.Exit(code)
}

// testBinary builds the daemon at the first call and returns its path.
func testBinary(t *testing.T) string {
	t.Helper()
	b := &builtBinary
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "loadtest-bin-"); b.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b.bin, b.err = BuildBinary(ctx, b.dir)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// TestRunDiscordSlackOnly: the mode without Telegram runs the chats on
// Discord and Slack only, with Telegram's channel off in the daemon, answers
// every message once and reports the daemon's CPU per message.
func TestRunDiscordSlackOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Bin: testBinary(t), Dir: t.TempDir(), Chats: 8, Messages: 3,
		Platforms: []Platform{Discord, Slack}, IdleSettle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Answered != 24 || rep.Duplicates != 0 || rep.ModelRequests != 24 {
		t.Errorf("answered %d of 24 with %d duplicates, %d model requests", rep.Answered, rep.Duplicates, rep.ModelRequests)
	}
	if _, ok := rep.PerPlatform["telegram"]; ok || rep.Channels != 2 {
		t.Errorf("telegram took part: %v, %d channels", rep.PerPlatform, rep.Channels)
	}
	for _, pl := range []string{"discord", "slack"} {
		if _, ok := rep.PerPlatform[pl]; !ok {
			t.Errorf("no latency figures for %s", pl)
		}
	}
	if rep.DaemonCPUPerMessage != rep.DaemonCPU/24 {
		t.Errorf("CPU per message %v of %v for 24 messages", rep.DaemonCPUPerMessage, rep.DaemonCPU)
	}
	var b strings.Builder
	rep.Markdown(&b)
	if !strings.Contains(b.String(), "daemon CPU per message") || !strings.Contains(b.String(), "(2 channels connected)") {
		t.Errorf("report:\n%s", b.String())
	}
}

// TestIdleOnly: the idle mode starts the daemon with three channels, sends
// nothing, and says where its resident memory is, binary first.
func TestIdleOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := testBinary(t)
	rep, err := Run(ctx, Options{Bin: bin, Dir: t.TempDir(), IdleOnly: true, IdleSettle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.IdleRSSKiB <= 0 || rep.IdleAnonKiB <= 0 || rep.IdleFileKiB <= 0 || rep.Answered != 0 {
		t.Errorf("idle figures: %+v", rep)
	}
	found := false
	for _, m := range rep.IdleMappings {
		found = found || (m.Name == bin && m.RSSKiB > 0)
	}
	if !found {
		t.Errorf("the binary is not among the mappings: %+v", rep.IdleMappings)
	}
	var b strings.Builder
	rep.IdleMarkdown(&b)
	if !strings.Contains(b.String(), "(3 channels connected)") || !strings.Contains(b.String(), bin) {
		t.Errorf("report:\n%s", b.String())
	}
}

func TestParsePlatforms(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Platform
		err  bool
	}{
		{"", nil, false},
		{"discord,slack", []Platform{Discord, Slack}, false},
		{" slack , discord,slack", []Platform{Slack, Discord}, false},
		{"telegram,discord,slack", []Platform{Telegram, Discord, Slack}, false},
		{"discord,irc", nil, true},
	} {
		got, err := ParsePlatforms(c.in)
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("ParsePlatforms(%q) = %v, %v", c.in, got, err)
		}
	}
}

// TestMappingsOfThisProcess: the smaps reader finds this test binary's pages.
func TestMappingsOfThisProcess(t *testing.T) {
	ms, err := Mappings(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	var total int64
	found := false
	for i, m := range ms {
		total += m.RSSKiB
		found = found || m.Name == exe
		if i > 0 && m.RSSKiB > ms[i-1].RSSKiB {
			t.Errorf("not sorted by RSS: %+v", ms)
		}
	}
	rss, _ := RSSKiB(os.Getpid())
	if !found || total <= 0 || total > 2*rss+1024 {
		t.Errorf("mappings sum to %d KiB (VmRSS %d KiB), binary found: %v", total, rss, found)
	}
}

// TestTapCountsDistinctPlatformMessages: the tap times the first call that
// carries a token and counts the distinct messages created with it, by the
// id the platform answered (a Discord nonce hit returns the same message).
func TestTapCountsDistinctPlatformMessages(t *testing.T) {
	next := 0
	tap := newTap(discordSend, discordID)
	backend := httptest.NewServer(tap.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("same") == "" {
			next++
		}
		fmt.Fprintf(w, `{"id":"%d","content":"x"}`, 1000+next)
	})))
	defer backend.Close()
	post := func(path, body string) {
		resp, err := http.Post(backend.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/api/v9/channels/1/messages", `{"content":"echo: q1x1z"}`)
	post("/api/v9/channels/1/messages?same=1", `{"content":"echo: q1x1z"}`) // nonce hit: same message
	post("/api/v9/channels/1/messages", `{"content":"echo: q1x2z"}`)
	post("/api/v9/channels/1/messages", `{"content":"echo: q1x2z"}`) // a real duplicate
	post("/api/v9/channels/1/typing", `{"content":"q1x3z"}`)         // not a message call
	got := tap.Sightings()
	if s := got["q1x1z"]; s.Creates != 1 || s.First.IsZero() {
		t.Errorf("q1x1z: %+v, want one message", s)
	}
	if s := got["q1x2z"]; s.Creates != 2 {
		t.Errorf("q1x2z: %+v, want two messages", s)
	}
	if _, ok := got["q1x3z"]; ok {
		t.Error("a typing call counted as a reply")
	}
	// One reply answering two messages, sent twice: both tokens were seen
	// twice, but the user saw one reply twice.
	post("/api/v9/channels/1/messages", `{"content":"echo: q1x4z q1x5z"}`)
	post("/api/v9/channels/1/messages", `{"content":"echo: q1x4z q1x5z"}`)
	post("/api/v9/channels/1/messages", `{"content":"echo: q1x6z"}`) // new token only: not a repeat
	got = tap.Sightings()
	if got["q1x4z"].Creates != 2 || got["q1x5z"].Creates != 2 {
		t.Errorf("q1x4z %+v, q1x5z %+v: want two messages each", got["q1x4z"], got["q1x5z"])
	}
	want := []string{"message 1003 with q1x2z", "message 1006 with q1x4z,q1x5z"}
	if reps := tap.Repeats(); !slices.Equal(reps, want) {
		t.Errorf("repeats %q, want %q", reps, want)
	}
}

func TestPercentileAndToken(t *testing.T) {
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {95, 10}, {99, 10}, {10, 1}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing")
	}
	if tok := Token(12, 0); tok != "q12x0z" || !tokenRE.MatchString(url.QueryEscape(tok)) {
		t.Errorf("Token = %q", tok)
	}
}
