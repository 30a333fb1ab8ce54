package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunTelegramOnly: the Telegram-only mode (issue 35) runs the chats on
// Telegram alone, with Discord and Slack off in the daemon and Telegram's
// pacing off, streams padded answers and answers every message once (an
// instant model's answer usually beats the first preview and the typing
// delay, so how many of those there are depends on the machine); the report
// counts the Bot API calls per answer, splits the peak RSS and says which
// sections of the binary are resident.
func TestRunTelegramOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Bin: testBinary(t), Dir: t.TempDir(), Chats: 4, Messages: 3, Platforms: []Platform{Telegram},
		AnswerChars: 300, TelegramUnpaced: true, IdleSettle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Answered != 12 || rep.Duplicates != 0 || rep.ModelRequests != 12 {
		t.Errorf("answered %d of 12 with %d duplicates, %d model requests", rep.Answered, rep.Duplicates, rep.ModelRequests)
	}
	if rep.Channels != 1 || len(rep.PerPlatform) != 1 {
		t.Errorf("channels %d, platforms %v; want telegram alone", rep.Channels, rep.PerPlatform)
	}
	if rep.TelegramCalls["sendMessage"] != 12 {
		t.Errorf("Telegram calls %v; want one sendMessage an answer", rep.TelegramCalls)
	}
	if rep.LoadAnonKiB+rep.LoadFileKiB != rep.LoadRSSKiB && rep.LoadAnonKiB != 0 {
		t.Errorf("peak RSS %d KiB split as %d + %d", rep.LoadRSSKiB, rep.LoadAnonKiB, rep.LoadFileKiB)
	}
	var b strings.Builder
	rep.Markdown(&b)
	if !strings.Contains(b.String(), "Telegram calls per answer") || !strings.Contains(b.String(), ".text ") {
		t.Errorf("report without the calls per answer:\n%s", b.String())
	}
}

// TestPaddedAnswer: the padding keeps the token first and makes the echoed
// answer about the length asked for.
func TestPaddedAnswer(t *testing.T) {
	for _, n := range []int{0, 10, 300, 1000} {
		got := padded("q1x2z", n)
		if !strings.HasPrefix(got, "q1x2z") {
			t.Errorf("padded(%d) = %q: token not first", n, got)
		}
		if want := max(n-len("echo: "), len("q1x2z")); len(got) != want {
			t.Errorf("padded(%d): %d characters, want %d", n, len(got), want)
		}
		if toks := tokenRE.FindAllString(got, -1); len(toks) != 1 {
			t.Errorf("padded(%d) carries tokens %v", n, toks)
		}
	}
}

// TestStartupTimesFirstPoll: the start-up mode starts the daemon, times the
// first getUpdates and keeps the slowest start's log.
func TestStartupTimesFirstPoll(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, reuse := range []bool{false, true} {
		rep, err := Startup(ctx, StartupOptions{Bin: testBinary(t), Dir: t.TempDir(), Starts: 2, ReuseData: reuse})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.ToFirstPoll) != 2 || rep.ToFirstPoll[0] <= 0 || rep.ToReady[1] <= 0 {
			t.Fatalf("reuse %v: first polls %v, ready %v", reuse, rep.ToFirstPoll, rep.ToReady)
		}
		if !strings.Contains(rep.SlowestLog, "first getUpdates") || !strings.Contains(rep.SlowestLog, "connected") {
			t.Errorf("reuse %v: the slowest start's log lacks the timeline:\n%s", reuse, rep.SlowestLog)
		}
	}
}
