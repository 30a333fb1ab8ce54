// Package channeltest is the conformance suite of a platform adapter
// (channels.Channel): Run proves, against any adapter driven through a fake
// of its platform, the behaviours every adapter owes the shared handler —
//
//   - a direct message is handed to the sink once, and an answer sent with
//     Send is on the platform once;
//   - a redelivered event carries the same Channel and MessageID, so the
//     handler's dedup drops it and the message is answered once;
//   - a long answer is split by Format under the adapter's limit, every code
//     block opened in a chunk closed in the same chunk, nothing lost, and the
//     platform accepts every chunk;
//   - an answer streams by edits where the platform allows them (Editor:
//     Send, then Edit changes that one message), or by deltas shown once
//     (DeltaWriter);
//   - typing (Typer) shows on the platform, is kept alive where it expires,
//     and stops with stop, which is idempotent;
//   - a group message without a mention arrives with Mentioned false, with
//     a mention Mentioned true and the mention stripped from Text;
//   - the bot's own messages never reach the sink, or arrive with FromSelf
//     set (which the handler's access policy drops);
//   - an image attachment arrives in Message.Media, its bytes intact;
//   - a rate-limit answer comes back from Send as channels.RateLimited with
//     the platform's retry_after, nothing posted;
//   - after a lost connection the adapter resumes without losing or doubling
//     a message (one delivered again, because the adapter could not
//     acknowledge it, carries its message id), and Send works again;
//   - a file sent with SendFile (channels.FileSender) is on the platform
//     once with its name, bytes and caption (files.go);
//   - Run called again on the same adapter after its context was canceled
//     (the daemon's supervisor restarts a failed channel, a replica runs
//     Telegram's poller again when it gets the lease back) delivers the
//     messages sent meanwhile and after, none lost or doubled.
//
// An adapter's tests call Run with a Harness that builds the adapter against
// a fresh fake of its platform (internal/testkit) and a Driver that plays
// the platform's users and reads what the bot did there. The suite runs the
// adapter itself (Run with a recording sink; canceling its context must end
// Run with nil). A behaviour the platform cannot show is skipped only when
// Capabilities.NotApplicable gives the reason; an adapter or driver that
// lacks what a behaviour needs without a reason fails it. A new platform is
// not done until it passes.
//
// The package imports only channels and the standard library, so it never
// compiles a fake, the handler or the agent.
//
// Files: channeltest.go (Harness, Driver, Capabilities, Run, the running
// adapter), recorder.go (the sink the suite runs adapters with), inbound.go
// (the behaviours of messages coming in), outbound.go (those of answers
// going out), longanswer.go (the long answer and its code-block checks),
// files.go (files going out), typingdelay.go (TypingDelay: the
// channels.QuickAnswer wait before typing, for the adapters that have one).
package channeltest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// Timeout bounds every wait of the suite (a message reaching the sink, the
// platform showing what the bot did). Generous, for a busy machine; it is
// never slept.
const Timeout = 20 * time.Second

// Behaviour names one behaviour of the suite; it is also its subtest's name.
type Behaviour string

// The behaviours every adapter must show.
const (
	DirectMessage  Behaviour = "DirectMessageAnsweredOnce"
	Redelivery     Behaviour = "RedeliveredEventAnsweredOnce"
	LongAnswer     Behaviour = "LongAnswerSplitWithFencesIntact"
	Streaming      Behaviour = "StreamingByEdits"
	Typing         Behaviour = "Typing"
	GroupMention   Behaviour = "GroupMentionGating"
	OwnMessages    Behaviour = "OwnMessagesIgnored"
	Attachment     Behaviour = "AttachmentIn"
	RateLimit      Behaviour = "RateLimitHonoured"
	LostConnection Behaviour = "LostConnectionResumed"
	Restart        Behaviour = "RunRestartedResumes"
)

// CodeStyle is how a code block looks in a platform's markup.
type CodeStyle int

const (
	// Fenced code blocks are between lines of ``` (Markdown, Discord, Slack mrkdwn).
	Fenced CodeStyle = iota
	// HTMLPre code blocks are <pre>…</pre> (Telegram HTML).
	HTMLPre
)

// Capabilities describes what the platform and its adapter promise.
type Capabilities struct {
	// MaxChunk is the longest chunk Format may return, in characters of
	// its Text and of its Plain (the suite's long answer is ASCII, so runes
	// and UTF-16 units agree). Required.
	MaxChunk int
	// MaxLines, when > 0, is the most lines a chunk's Text may have.
	MaxLines int
	// CodeBlocks is how code blocks look in Format's chunks.
	CodeBlocks CodeStyle
	// TypingExpires says the platform shows typing for a few seconds after
	// each signal and has no way to take it down (Telegram, Discord):
	// StartTyping must then refresh it until stop, and the Driver cannot
	// tell whether it shows now. Otherwise the indicator is on until stop
	// takes it down, and the Driver reports whether it shows.
	TypingExpires bool
	// NotApplicable names the behaviours the platform cannot show, each
	// with the reason; the suite skips them, saying why.
	NotApplicable map[Behaviour]string
}

// Event is a handle on one platform event a Driver produced, for Redeliver;
// what it holds is the driver's business.
type Event any

// Driver plays the platform around a running adapter: its users speak, and
// it reports what the bot did there. Methods fail t on a driver problem.
type Driver interface {
	// DirectTarget is a one-to-one chat between a user and the bot, as the
	// adapter addresses it.
	DirectTarget() channels.Target
	// UserSays posts text as a user in target's chat: in a group, without
	// mentioning the bot.
	UserSays(t testing.TB, target channels.Target, text string) Event
	// Sent returns the bot's messages in target's chat (its thread, if
	// any) as users see them now, edits applied, oldest first.
	Sent(target channels.Target) []string
	// WaitFor waits until cond holds, failing t after a timeout; cond may
	// call the driver.
	WaitFor(t testing.TB, what string, cond func() bool)
}

// GroupDriver is a Driver of a platform with group chats.
type GroupDriver interface {
	Driver
	// GroupTarget is a group chat the bot is a member of.
	GroupTarget() channels.Target
	// UserMentions posts text as a user in the group target, mentioning
	// the bot the way the platform's clients do (the mention is not part
	// of text).
	UserMentions(t testing.TB, target channels.Target, text string) Event
}

// RedeliveryDriver is a Driver of a platform that delivers an event again
// (a retry after a lost acknowledgement, a replay after a reconnect).
type RedeliveryDriver interface {
	Driver
	// Redeliver delivers ev again, as the platform does.
	Redeliver(t testing.TB, ev Event)
}

// SelfDriver is a Driver of a platform on which the bot's own messages can
// come back as events.
type SelfDriver interface {
	Driver
	// BotSays delivers an event of a message the bot itself wrote in
	// target's chat.
	BotSays(t testing.TB, target channels.Target, text string)
}

// MediaDriver is a Driver of a platform whose users send images.
type MediaDriver interface {
	Driver
	// UserSendsImage posts an image (data) with a caption as a user in
	// target's chat.
	UserSendsImage(t testing.TB, target channels.Target, caption string, data []byte) Event
}

// RateLimitDriver is a Driver of a platform that rate-limits the bot.
type RateLimitDriver interface {
	Driver
	// RateLimitNextSend makes the platform answer the next message the bot
	// posts with its rate-limit answer asking to retry after d.
	RateLimitNextSend(t testing.TB, d time.Duration)
}

// ReconnectDriver is a Driver of a platform the adapter holds a connection to.
type ReconnectDriver interface {
	Driver
	// DropConnection cuts the adapter's connection(s) to the platform
	// abruptly, as a network failure does.
	DropConnection(t testing.TB)
}

// TypingDriver is a Driver of a platform that shows a typing indicator.
type TypingDriver interface {
	Driver
	// TypingTarget prepares a chat where the platform can show the bot
	// typing; each call returns a different chat.
	TypingTarget(t testing.TB) channels.Target
	// Typing reports the typing signals the platform received for target
	// (each refresh counts) and, where typing does not expire by itself,
	// whether it shows now.
	Typing(target channels.Target) (signals int, shown bool)
}

// Harness builds one adapter under test, against its own fake platform.
type Harness interface {
	// Capabilities describes the platform and the adapter.
	Capabilities() Capabilities
	// New builds the adapter and a fresh fake platform for it, both living
	// until the test ends (t.Cleanup), and the driver of that platform.
	// It does not run the adapter: the suite does.
	New(t *testing.T) (channels.Channel, Driver)
}

// Run runs the conformance suite against the adapters h builds, each
// behaviour as a subtest (named after its Behaviour) with a fresh adapter.
func Run(t *testing.T, h Harness) {
	caps := h.Capabilities()
	if caps.MaxChunk <= 0 {
		t.Fatal("channeltest: Capabilities.MaxChunk must be set")
	}
	s := suite{h: h, caps: caps}
	tests := []struct {
		b  Behaviour
		fn func(*testing.T, *rig)
	}{
		{DirectMessage, s.testDirectMessage},
		{Restart, s.testRestart},
		{Redelivery, s.testRedelivery},
		{LongAnswer, s.testLongAnswer},
		{Streaming, s.testStreaming},
		{Typing, s.testTyping},
		{GroupMention, s.testGroupMention},
		{OwnMessages, s.testOwnMessages},
		{Attachment, s.testAttachment},
		{RateLimit, s.testRateLimit},
		{LostConnection, s.testLostConnection},
		{FileOut, s.testFileOut}, // files.go
	}
	for _, tc := range tests {
		t.Run(string(tc.b), func(t *testing.T) {
			if why, ok := caps.NotApplicable[tc.b]; ok {
				t.Skipf("not applicable: %s", why)
			}
			tc.fn(t, s.start(t))
		})
	}
}

type suite struct {
	h    Harness
	caps Capabilities
}

// rig is one running adapter with its sink and driver.
type rig struct {
	ch   channels.Channel
	drv  Driver
	sink *recorder
	ctx  context.Context // for calls of the test; canceled when it ends
	seq  int             // nonces
	stop func()          // ends the current Run
}

// start builds an adapter, runs it until the test ends and waits until it
// is ready.
func (s suite) start(t *testing.T) *rig {
	t.Helper()
	ch, drv := s.h.New(t)
	if ch == nil || drv == nil {
		t.Fatal("channeltest: Harness.New returned a nil channel or driver")
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{ch: ch, drv: drv, sink: newRecorder(), ctx: ctx}
	t.Cleanup(func() {
		r.stop()
		cancel()
	})
	r.run(t)
	return r
}

// run starts Run with a context of its own and waits until the adapter is
// ready; r.stop cancels that context and checks that Run returns nil.
func (r *rig) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.ch.Run(ctx, r.sink) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v after its context was canceled; want nil", err)
				}
			case <-time.After(Timeout):
				t.Errorf("Run did not return within %s after its context was canceled", Timeout)
			}
		})
	}
	if rd, ok := r.ch.(channels.Readiness); ok {
		waitReady(t, rd, done)
	}
}

// waitReady waits until the adapter says it is connected; Run ending first
// fails the test.
func waitReady(t *testing.T, rd channels.Readiness, done chan error) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for !rd.Ready() {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("Run returned %v before the adapter was ready", err)
		case <-deadline.C:
			t.Fatalf("the adapter was not ready within %s", Timeout)
		case <-tick.C:
		}
	}
}

// nonce returns a fresh Outgoing.Nonce.
func (r *rig) nonce() string {
	r.seq++
	return fmt.Sprintf("ct-%d-%d", time.Now().UnixNano()%1e9, r.seq)
}

// send formats markdown into exactly one chunk and sends it to target.
func (r *rig) send(t *testing.T, target channels.Target, markdown string) string {
	t.Helper()
	chunks := r.ch.Format(markdown)
	if len(chunks) != 1 {
		t.Fatalf("Format(%q) returned %d chunks, want 1", markdown, len(chunks))
	}
	id, err := r.ch.Send(r.ctx, channels.Outgoing{Target: target, Text: chunks[0].Text, Plain: chunks[0].Plain, Nonce: r.nonce()})
	if err != nil {
		t.Fatalf("Send(%q) to %s: %v", markdown, target, err)
	}
	if id == "" {
		t.Fatalf("Send(%q) to %s returned an empty message id", markdown, target)
	}
	return id
}

// waitSent waits until the bot has at least n messages in target and
// returns them.
func (r *rig) waitSent(t *testing.T, target channels.Target, n int) []string {
	t.Helper()
	var got []string
	r.drv.WaitFor(t, fmt.Sprintf("%d bot message(s) in %s", n, target), func() bool {
		got = r.drv.Sent(target)
		return len(got) >= n
	})
	return got
}

// converse has the user say something in target's chat and returns the
// message the sink got: outbound behaviours answer a user, as the bot does.
func (r *rig) converse(t *testing.T, target channels.Target, text string) channels.Message {
	t.Helper()
	r.drv.UserSays(t, target, text)
	return r.sink.waitText(t, text)
}

// need returns the driver as D, or fails the test when it is not one (Run
// already skipped the behaviours the harness gave a reason for).
func need[D any](t *testing.T, drv Driver, what string) D {
	t.Helper()
	d, ok := drv.(D)
	if !ok {
		t.Fatalf("the driver is no %s: implement it, or name this behaviour in Capabilities.NotApplicable with the reason", what)
	}
	return d
}

// inBackground runs fn in a goroutine with a testing.TB that records its
// failures; the returned join waits for fn and reports them on t.
func inBackground(t *testing.T, fn func(testing.TB)) (join func()) {
	b := &bgTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(b)
	}()
	return func() {
		t.Helper()
		select {
		case <-done:
		case <-time.After(Timeout):
			t.Fatalf("a driver call did not return within %s", Timeout)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, f := range b.failures {
			t.Error(f)
		}
	}
}

// bgTB is the testing.TB of a goroutine that is not the test's: a failure
// is recorded (and FailNow ends the goroutine) for the test to report.
type bgTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (b *bgTB) fail(s string) {
	b.mu.Lock()
	b.failures = append(b.failures, s)
	b.mu.Unlock()
}

func (b *bgTB) Helper()                        {}
func (b *bgTB) Fail()                          { b.fail("failed") }
func (b *bgTB) FailNow()                       { b.fail("failed"); runtime.Goexit() }
func (b *bgTB) Error(args ...any)              { b.fail(fmt.Sprint(args...)) }
func (b *bgTB) Errorf(format string, a ...any) { b.fail(fmt.Sprintf(format, a...)) }
func (b *bgTB) Fatal(args ...any)              { b.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (b *bgTB) Fatalf(format string, a ...any) { b.fail(fmt.Sprintf(format, a...)); runtime.Goexit() }
