// Package chaos holds Switchboard's fault-injection and security tests: the
// real switchboard binary runs as a child process against the fake platforms
// and the fake model (internal/loadtest), and the tests SIGKILL it, break its
// model, drop its connections, fill or freeze its disk and flood it, then
// check what a user would see: every message answered exactly once, sessions
// intact, clear errors, no secret in any output. Every test is bounded to a
// few seconds and skipped with -short.
package chaos

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// TestKillRestartDuringConversations SIGKILLs the daemon, on a machine kept
// busy by a CPU hog, at random points while 100 conversations (spread over Telegram, Discord and Slack) run, and
// restarts it each time. Telegram and Slack redeliver what was not
// acknowledged (Slack's retry is played by the harness), so every user
// message there must get exactly one reply. Resends in the one window
// DESIGN.md allows (a chunk with a send intent and no receipt) are counted
// from the daemon's "resending a chunk" warnings and reported apart.
func TestKillRestartDuringConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts and kills the daemon binary")
	}
	cpuHog(t)
	const chats, msgs, kills = 100, 3, 4
	dataDir := filepath.Join(t.TempDir(), "data")
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{DataDir: dataDir})
	r.start()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.p.RedeliverSlack(ctx, 400*time.Millisecond)

	var killer sync.WaitGroup
	killer.Add(1)
	go func() {
		defer killer.Done()
		rnd := rand.New(rand.NewPCG(1, 2))
		for range kills {
			select {
			case <-time.After(time.Duration(100+rnd.IntN(400)) * time.Millisecond):
			case <-ctx.Done():
				return
			}
			r.current().Kill()
			r.start()
		}
	}()
	res := r.converse(ctx, chats, msgs, 5*time.Second)
	killer.Wait()

	// Counted as replies the user saw twice: a resent chunk that answered
	// two messages at once is one duplicate, not two (Tap.Repeats).
	dups := r.p.Repeats()
	var firstContact []string
	for tok, pl := range res.lost {
		if pl == loadtest.Discord && strings.HasSuffix(strings.TrimSuffix(tok, "z"), "x0") {
			// Discord has no redelivery and a bot cannot list its DMs: a
			// channel's very first message, dispatched while the daemon is
			// down, is unknowable. Every later message is caught up from the
			// channel's persisted cursor.
			firstContact = append(firstContact, tok)
			continue
		}
		t.Errorf("%s message %s never answered", pl, tok)
	}
	if len(firstContact) > 0 {
		t.Logf("documented limit: %d Discord first messages sent while the daemon was down: %v", len(firstContact), firstContact)
	}
	out := r.output()
	resends := strings.Count(out, "resending a chunk")
	t.Logf("%d kills; %d of %d messages answered (telegram %d, discord %d, slack %d); %d resends in the intent-without-receipt window",
		kills, len(res.answered), chats*msgs, res.perPlat[loadtest.Telegram], res.perPlat[loadtest.Discord], res.perPlat[loadtest.Slack], resends)
	// A duplicate is only acceptable as the product of a counted resend.
	if len(dups) > resends {
		t.Errorf("%d duplicate replies but only %d counted resends: %v", len(dups), resends, dups)
	} else if len(dups) > 0 {
		t.Logf("duplicates, all explained by counted resends: %v", dups)
	}
	// Rare: a kill can only catch the chunks whose platform call is in
	// flight at that instant. How many that is depends on how fast the
	// fakes answer (slow under -race, as they run in this process), so the
	// bound is loose; the figures are logged above and in BENCHMARKS.md.
	if resends > chats*msgs*3/10 {
		t.Errorf("%d resends for %d messages: the intent-without-receipt window should be rare", resends, chats*msgs)
	}

	// Sessions intact: stop cleanly, open the store, check it and every
	// answered conversation's history.
	if err := r.current().Stop(eventWait); err != nil {
		t.Logf("daemon exit: %v", err)
	}
	st, err := bolt.Open(filepath.Join(dataDir, "switchboard.db"), memory.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("reopen store: %v", err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("store check after kills: %v", err)
	}
	sessions, err := st.ListSessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) < chats {
		t.Errorf("%d sessions stored, want %d", len(sessions), chats)
	}
	for c := range chats {
		key := sessionKey(c)
		hist, err := st.LoadHistory(context.Background(), key, 100)
		if err != nil {
			t.Errorf("history of %s: %v", key, err)
			continue
		}
		var users []string
		for _, m := range hist {
			if m.Role == "user" {
				users = append(users, m.Content)
			}
		}
		joined := strings.Join(users, "\n")
		for seq := range msgs {
			if slices.Contains(firstContact, loadtest.Token(c, seq)) {
				continue
			}
			if n := strings.Count(joined, loadtest.Token(c, seq)); n != 1 {
				t.Errorf("session %s holds user message %s %d times, want once (history: %q)", key, loadtest.Token(c, seq), n, users)
			}
		}
	}
}

func sessionKey(chat int) string {
	switch loadtest.PlatformOf(chat) {
	case loadtest.Telegram:
		return "telegram:" + itoa64(loadtest.TelegramChatID(chat))
	case loadtest.Discord:
		return "discord:" + loadtest.DiscordChannelID(chat)
	default:
		return "slack:D" + loadtest.SlackUserID(chat)
	}
}

func itoa64(n int64) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{digits[n%10]}, b...)
		n /= 10
	}
	return string(b)
}
