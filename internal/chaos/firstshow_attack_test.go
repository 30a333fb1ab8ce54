package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// words is a plain-words text of about n characters starting with tag, so the
// text a user sees is exactly it.
func words(tag string, n int) string {
	var b strings.Builder
	b.WriteString(tag)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, " w%d", i)
	}
	return b.String()
}

// chatCalls are the bot's calls of method into chat, oldest first.
func chatCalls(tg *faketelegram.Server, method string, chat int64) []faketelegram.Request {
	var out []faketelegram.Request
	for _, r := range tg.Requests(method) {
		if r.Fields["chat_id"] == strconv.FormatInt(chat, 10) {
			out = append(out, r)
		}
	}
	return out
}

// TestAttackTelegramFirstShow drives the built binary through Telegram as
// users would: slow streams in private chats and groups, answers that end
// around the first-show and typing delays, a turn with a tool call, and an
// answer that rolls over into a second message. In every chat the answer
// must be shown once and complete, nothing of the turn may follow the final
// message (no preview, no typing), and a group keeps no draft beside it.
func TestAttackTelegramFirstShow(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts the daemon binary")
	}
	type scenario struct {
		name    string
		group   bool
		answer  string
		resp    func(*fakellm.Request) fakellm.Response
		minMsgs int // messages the answer takes
	}
	slow := func(a string, chunk int) func(*fakellm.Request) fakellm.Response {
		return func(*fakellm.Request) fakellm.Response {
			return fakellm.Response{Content: a, ChunkSize: chunk, Delay: time.Second, TokensPerSecond: 40}
		}
	}
	delayed := func(a string, d time.Duration) func(*fakellm.Request) fakellm.Response {
		return func(*fakellm.Request) fakellm.Response {
			return fakellm.Response{Content: a, ChunkSize: 6, Delay: d}
		}
	}
	toolTurn := func(a string) func(*fakellm.Request) fakellm.Response {
		return func(req *fakellm.Request) fakellm.Response {
			if req.LastMessage().Role == "tool" {
				return fakellm.Response{Content: a, ChunkSize: 6, ChunkDelay: 10 * time.Millisecond}
			}
			return fakellm.Response{Content: "Let me check the clock for you, one moment please…", ChunkSize: 4,
				ChunkDelay: 20 * time.Millisecond, ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}}
		}
	}
	// A short remark and a tool call at once, then (after the model's
	// latency) an answer complete at once: no draft of it may be shown.
	quickAfterTool := func(a string) func(*fakellm.Request) fakellm.Response {
		return func(req *fakellm.Request) fakellm.Response {
			if req.LastMessage().Role == "tool" {
				return fakellm.Response{Content: a, ChunkSize: 50, Delay: 600 * time.Millisecond}
			}
			return fakellm.Response{Content: "Let me look that up for you right now.", ChunkSize: 50,
				ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}}
		}
	}
	var scs []scenario
	for _, g := range []bool{false, true} {
		kind := "private"
		if g {
			kind = "group"
		}
		a := words("slow-"+kind, 1000)
		scs = append(scs, scenario{name: "slow " + kind, group: g, answer: a, resp: slow(a, 10), minMsgs: 1})
		b := words("roll-"+kind, 5000)
		scs = append(scs, scenario{name: "rollover " + kind, group: g, answer: b, resp: slow(b, 50), minMsgs: 2})
		e := words("thentool-"+kind, 200)
		scs = append(scs, scenario{name: "quick after tool " + kind, group: g, answer: e, resp: quickAfterTool(e), minMsgs: 1})
		c := words("tool-"+kind, 200)
		scs = append(scs, scenario{name: "tool " + kind, group: g, answer: c, resp: toolTurn(c), minMsgs: 1})
		for _, ms := range []int{200, 300, 400} {
			d := words(fmt.Sprintf("quick%d-%s", ms, kind), 80)
			scs = append(scs, scenario{name: fmt.Sprintf("quick %dms %s", ms, kind), group: g, answer: d,
				resp: delayed(d, time.Duration(ms)*time.Millisecond), minMsgs: 1})
		}
	}
	byKey := map[string]func(*fakellm.Request) fakellm.Response{}
	for i, sc := range scs {
		byKey["case"+strconv.Itoa(i)+"x"] = sc.resp
	}
	model := loadtest.ModelOptions{Responder: func(req *fakellm.Request) fakellm.Response {
		for _, m := range req.Body.Messages {
			if m.Role != "user" {
				continue
			}
			for k, f := range byKey {
				if strings.Contains(fakellm.MessageText(m), k) {
					return f(req)
				}
			}
		}
		return fakellm.Response{Content: "unknown"}
	}}
	r := newRig(t, model, loadtest.ConfigOptions{NoDiscord: true, NoSlack: true, LogLevel: "info"})
	r.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon output:\n%s", r.output())
		}
	})
	tg := r.p.Telegram
	var wg sync.WaitGroup
	for i, sc := range scs {
		chat := int64(700000 + i)
		var opts []faketelegram.SayOption
		text := "case" + strconv.Itoa(i) + "x please"
		if sc.group {
			chat = -1001000000 - int64(i)
			opts = append(opts, faketelegram.InSupergroup("Team "+strconv.Itoa(i)))
			text = "@switchboard_bot " + text
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tg.UserSays(chat, text, opts...)
		}()
		t.Run(sc.name, func(t *testing.T) {
			sc, chat := sc, chat
			t.Parallel()
			want := strings.Join(strings.Fields(sc.answer), " ")
			shown := func() string {
				var parts []string
				for _, m := range tg.Sent(chat) {
					parts = append(parts, m.Plain)
				}
				return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
			}
			if !until(func() bool { return shown() == want }) {
				s := shown()
				t.Fatalf("the chat never showed the answer; it shows %d chars: %.120q…", len(s), s)
			}
			time.Sleep(1500 * time.Millisecond) // anything the turn still does would land now
			sent := tg.Sent(chat)
			if got := shown(); got != want {
				t.Errorf("the chat changed after the answer: %.120q", got)
			}
			if len(sent) != sc.minMsgs {
				t.Errorf("%d messages, want %d", len(sent), sc.minMsgs)
			}
			msgs := chatCalls(tg, "sendMessage", chat)
			if len(msgs) != sc.minMsgs {
				t.Errorf("%d sendMessage calls, want %d", len(msgs), sc.minMsgs)
			}
			if len(msgs) == 0 {
				return
			}
			// The answer is complete with the last sendMessage or edit.
			final := msgs[len(msgs)-1].Time
			if edits := chatCalls(tg, "editMessageText", chat); len(edits) > 0 && edits[len(edits)-1].Time.After(final) {
				if !sc.group {
					t.Errorf("an edit after the final message in a private chat")
				}
				final = edits[len(edits)-1].Time
			}
			if strings.HasPrefix(sc.name, "tool") || strings.HasPrefix(sc.name, "quick after") {
				for _, c := range append(msgs, chatCalls(tg, "editMessageText", chat)...) {
					t.Logf("%s %s %.60q", c.Time.Format("05.000"), c.Method, c.Fields["text"])
				}
				for _, d := range tg.Drafts(chat) {
					t.Logf("%s preview %.60q", d.Time.Format("05.000"), d.Plain)
				}
				for _, c := range chatCalls(tg, "sendChatAction", chat) {
					t.Logf("%s typing", c.Time.Format("05.000"))
				}
			}
			for _, m := range []string{"sendMessageDraft", "sendChatAction"} {
				for _, c := range chatCalls(tg, m, chat) {
					if c.Time.After(final) {
						t.Errorf("%s at +%v after the final sendMessage", m, c.Time.Sub(final))
					}
				}
			}
			drafts := tg.Drafts(chat)
			typing := chatCalls(tg, "sendChatAction", chat)
			edits := chatCalls(tg, "editMessageText", chat)
			t.Logf("%d sendMessage, %d edits, %d previews, %d typing", len(msgs), len(edits), len(drafts), len(typing))
			if strings.HasPrefix(sc.name, "quick") && (len(edits) > 0 || len(drafts) > 0) {
				t.Errorf("an answer complete at once was shown as a draft first: %d edits, %d previews", len(edits), len(drafts))
			}
			if strings.HasPrefix(sc.name, "slow") || strings.HasPrefix(sc.name, "rollover") {
				if len(typing) == 0 {
					t.Errorf("no typing indicator during a 3 s answer")
				}
				if sc.group && len(edits) < 2 {
					t.Errorf("a group saw %d edits of a 3 s streamed answer", len(edits))
				}
				if !sc.group && len(drafts) < 2 {
					t.Errorf("a private chat saw %d previews of a 3 s streamed answer", len(drafts))
				}
				if !sc.group && len(edits) > 0 {
					t.Errorf("a private chat saw message edits")
				}
			}
		})
	}
	wg.Wait()
}

// streamingModel answers every question with answer, streamed over about
// 3 s (so a /stop or a kill at 600 ms lands mid-answer even on a loaded
// machine), and reports each request on began.
func streamingModel(answer string, began chan<- struct{}) loadtest.ModelOptions {
	return loadtest.ModelOptions{Responder: func(req *fakellm.Request) fakellm.Response {
		select {
		case began <- struct{}{}:
		default:
		}
		return fakellm.Response{Content: answer, ChunkSize: 10, ChunkDelay: 50 * time.Millisecond}
	}}
}

// TestAttackKillAroundFirstShow SIGKILLs the built binary 150 ms into a
// streamed answer — before its first draft, a state the first-show delay
// added — and restarts it: the chat must show the answer exactly once and
// complete, no fragment. (Kills after the first draft: TestKillDuringStreamingAnswers.)
func TestAttackKillAroundFirstShow(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts and kills the daemon binary")
	}
	for _, group := range []bool{true, false} {
		for _, at := range []time.Duration{150 * time.Millisecond} {
			name := fmt.Sprintf("group=%t kill at %v", group, at)
			t.Run(name, func(t *testing.T) {
				t.Parallel() // a daemon and fakes of its own
				answer := words("killed-answer", 600)
				began := make(chan struct{}, 1)
				r := newRig(t, streamingModel(answer, began), loadtest.ConfigOptions{NoDiscord: true, NoSlack: true, LogLevel: "info",
					DataDir: t.TempDir()})
				r.start()
				tg := r.p.Telegram
				chat, text := int64(710001), "tell me"
				var opts []faketelegram.SayOption
				if group {
					chat, text = -1001000777, "@switchboard_bot tell me"
					opts = append(opts, faketelegram.InSupergroup("Team"))
				}
				tg.UserSays(chat, text, opts...)
				if !arrived(began) {
					t.Fatal("the model was never asked")
				}
				time.Sleep(at)
				before := len(tg.Sent(chat))
				r.current().Kill()
				r.start()
				if !until(func() bool {
					s := tg.Sent(chat)
					return len(s) > 0 && s[len(s)-1].Plain == answer
				}) {
					t.Fatalf("the answer never showed; chat: %+v\n%s", tg.Sent(chat), r.output())
				}
				time.Sleep(1500 * time.Millisecond)
				sent := tg.Sent(chat)
				t.Logf("messages before the kill %d; after: %d; previews %d", before, len(sent), len(tg.Drafts(chat)))
				if len(sent) != 1 || sent[0].Plain != answer {
					for _, m := range sent {
						t.Logf("message %d: %.80q", m.MessageID, m.Plain)
					}
					t.Errorf("the chat shows %d messages, want the answer once\n%s", len(sent), r.output())
				}
			})
		}
	}
}

// TestAttackStopAroundFirstShow: /stop 150 ms into a streamed answer (before
// its first draft and typing) ends the turn: the chat gets "Stopped." and nothing of the turn
// after it (no typing, edit or preview); only a group's draft shown before
// the /stop may stay.
func TestAttackStopAroundFirstShow(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts the daemon binary")
	}
	answer := words("stopped-answer", 600)
	began := make(chan struct{}, 1)
	r := newRig(t, streamingModel(answer, began), loadtest.ConfigOptions{NoDiscord: true, NoSlack: true, LogLevel: "info"})
	r.start()
	tg := r.p.Telegram
	i := 0
	for _, group := range []bool{true, false} {
		for _, at := range []time.Duration{150 * time.Millisecond} {
			i++
			t.Run(fmt.Sprintf("group=%t stop at %v", group, at), func(t *testing.T) {
				chat, text, stop := int64(720000+i), "tell me", "/stop"
				var opts []faketelegram.SayOption
				if group {
					chat, text, stop = -1001000800-int64(i), "@switchboard_bot tell me", "/stop@switchboard_bot"
					opts = append(opts, faketelegram.InSupergroup("Team"))
				}
				tg.UserSays(chat, text, opts...)
				if !arrived(began) {
					t.Fatal("the model was never asked")
				}
				time.Sleep(at)
				tg.UserSays(chat, stop, opts...)
				if !until(func() bool {
					return slices.ContainsFunc(tg.Sent(chat), func(m faketelegram.SentMessage) bool { return m.Plain == "Stopped." })
				}) {
					t.Fatalf("no Stopped. reply; chat: %+v", tg.Sent(chat))
				}
				time.Sleep(1500 * time.Millisecond)
				sent := tg.Sent(chat)
				var stoppedAt time.Time
				for _, c := range chatCalls(tg, "sendMessage", chat) {
					if c.Fields["text"] == "Stopped." {
						stoppedAt = c.Time
					}
				}
				for _, m := range []string{"sendChatAction", "editMessageText", "sendMessageDraft"} {
					for _, c := range chatCalls(tg, m, chat) {
						if c.Time.After(stoppedAt) {
							t.Errorf("%s +%v after Stopped.", m, c.Time.Sub(stoppedAt))
						}
					}
				}
				// A group may keep the draft shown before /stop (what was
				// streamed so far, as TestStopCancelsLongTurn allows), never
				// the whole answer or a second message.
				var others []string
				for _, m := range sent {
					if m.Plain != "Stopped." {
						others = append(others, m.Plain)
					}
				}
				switch {
				case len(sent) != len(others)+1:
					t.Errorf("%d Stopped. replies", len(sent)-len(others))
				case len(others) > 1, !group && len(others) > 0:
					t.Errorf("after /stop the chat keeps %q", others)
				case len(others) == 1 && (others[0] == answer || !strings.HasPrefix(answer, others[0])):
					t.Errorf("after /stop the chat keeps %.80q, not a part of the answer", others[0])
				}
			})
		}
	}
}
