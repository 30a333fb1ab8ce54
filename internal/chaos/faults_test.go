package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// faultyModel answers like the echo model except that the first call for 3
// conversations in 7 fails — HTTP 429 (Retry-After: 0), HTTP 500 or a stream
// cut after its second chunk, in turn — so 30% of all model calls fail. Only
// first calls fail: the agent's backoff starts at 1s (DESIGN §3), and chains
// of failures would make the test slow without testing anything new.
func faultyModel(faults *atomic.Int64) fakellm.Responder {
	echo := fakellm.Echo()
	var mu sync.Mutex
	tried := map[string]bool{}
	return func(r *fakellm.Request) fakellm.Response {
		out := echo(r)
		tok := tokenOf(r.LastUserText())
		var chat int
		if _, err := fmt.Sscanf(tok, "q%dx", &chat); err != nil || chat%7 > 4 || chat%7%2 == 1 {
			return out
		}
		mu.Lock()
		first := !tried[tok]
		tried[tok] = true
		mu.Unlock()
		if !first {
			return out
		}
		faults.Add(1)
		switch chat % 3 {
		case 0:
			return fakellm.Response{Status: 429, ErrorMessage: "Rate limit reached", RetryAfter: "0"}
		case 1:
			return fakellm.Response{Status: 500, ErrorMessage: "The server had an error"}
		default:
			out.CutAfter = 2
			return out
		}
	}
}

func tokenOf(s string) string {
	i := strings.Index(s, "q")
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], "z")
	if j < 0 {
		return ""
	}
	return s[i : i+j+1]
}

// TestModelFaultsEveryMessageAnswered: the model fails 30% of its calls
// (429, 500, broken streams); every message on every platform is still
// answered, exactly once, with the real answer rather than an apology.
func TestModelFaultsEveryMessageAnswered(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	var faults atomic.Int64
	r := newRig(t, loadtest.ModelOptions{Responder: faultyModel(&faults)}, loadtest.ConfigOptions{})
	r.start()
	const chats, msgs = 45, 1
	res := r.converse(context.Background(), chats, msgs, 15*time.Second)
	for tok, pl := range res.lost {
		t.Errorf("%s message %s never answered", pl, tok)
	}
	if dups := res.duplicates(); len(dups) > 0 {
		t.Errorf("duplicate replies: %v", dups)
	}
	if requests := int64(r.p.LLM.RequestCount()); faults.Load()*100 < requests*25 {
		t.Errorf("only %d of %d model calls failed; the test did not exercise retries", faults.Load(), requests)
	}
	// The replies are the model's answers, not friendly error texts.
	for c := range chats {
		if loadtest.PlatformOf(c) != loadtest.Telegram {
			continue
		}
		for _, m := range r.p.Telegram.Sent(loadtest.TelegramChatID(c)) {
			if !strings.HasPrefix(m.Plain, "echo: q") {
				t.Errorf("telegram chat %d got %q, want the echoed answer", c, m.Plain)
			}
		}
	}
	t.Logf("%d answered, %d model faults injected over %d model requests", len(res.answered), faults.Load(), r.p.LLM.RequestCount())
}

// TestConnectionDropsNothingLostNothingDoubled drops the Discord gateway and
// the Slack Socket Mode connections and breaks Telegram's long poll every
// 200ms while conversations run: every message is answered exactly once.
func TestConnectionDropsNothingLostNothingDoubled(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	r := newRig(t, loadtest.ModelOptions{}, loadtest.ConfigOptions{})
	r.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Slack retries an envelope that was not acked (one written onto a
	// connection that dropped before the client read it), as the real
	// service does; the handler's dedup keeps retries of handled ones silent.
	go r.p.RedeliverSlack(ctx, 400*time.Millisecond)
	var drops atomic.Int64
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			switch drops.Add(1) % 3 {
			case 0:
				r.p.Discord.DropConnection()
			case 1:
				r.p.Slack.DropConnections()
			case 2:
				r.p.TelegramTap.DropLongPolls()
			}
		}
	}()
	const chats, msgs = 30, 4
	res := r.converse(ctx, chats, msgs, 10*time.Second)
	cancel()
	for tok, pl := range res.lost {
		t.Errorf("%s message %s never answered", pl, tok)
	}
	if dups := res.duplicates(); len(dups) > 0 {
		t.Errorf("duplicate replies: %v", dups)
	}
	if n := strings.Count(r.output(), "resending a chunk"); n > 0 {
		t.Errorf("%d resends without any crash", n)
	}
	t.Logf("%d answered across %d connection drops (discord resumes %d, slack connections %d)",
		len(res.answered), drops.Load(), len(r.p.Discord.Resumes()), r.p.Slack.Connections())
}
