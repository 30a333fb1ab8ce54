package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/channeltest"
	"github.com/switchboard-bot/switchboard/internal/testkit"
)

// The adapter conformance suite (channels/channeltest), run against the web
// console's chat channel: messages posted as the console does, answers read
// from its history and live events.
func TestConformance(t *testing.T) {
	channeltest.Run(t, conformance{})
}

const conformanceConv = "conformance"

type conformance struct{}

func (conformance) Capabilities() channeltest.Capabilities {
	const inProcess = "the web channel lives in the daemon's process: no platform API, no connection"
	return channeltest.Capabilities{
		MaxChunk:   16000, // Options.MaxChunk's default
		CodeBlocks: channeltest.Fenced,
		NotApplicable: map[channeltest.Behaviour]string{
			channeltest.Redelivery:     "Post hands a message to the handler once and returns its answer to the console; nothing delivers it again",
			channeltest.GroupMention:   "a console conversation is the operator's one-to-one chat; there are no groups",
			channeltest.OwnMessages:    "the bot's messages are events to the browser, never input",
			channeltest.RateLimit:      inProcess,
			channeltest.LostConnection: inProcess,
		},
	}
}

func (conformance) New(t *testing.T) (channels.Channel, channeltest.Driver) {
	a := New(Options{})
	t.Cleanup(a.Stop)
	return a, &webDriver{a: a, typing: map[string]int{}}
}

// webDriver posts as the console does and reads the conversation's history
// and typing events.
type webDriver struct {
	a *Adapter

	mu     sync.Mutex
	typing map[string]int // conversation → "typing on" events seen
}

func (d *webDriver) DirectTarget() channels.Target {
	return channels.Target{Channel: Name, ChatID: conformanceConv}
}

func (d *webDriver) UserSays(t testing.TB, tg channels.Target, text string) channeltest.Event {
	ctx, cancel := context.WithTimeout(context.Background(), channeltest.Timeout)
	defer cancel()
	if _, err := d.a.Post(ctx, tg.ChatID, "operator", text); err != nil {
		t.Fatalf("Post: %v", err)
	}
	return nil
}

// UserSendsImage uploads an image as the console's chat page does
// (PostFile, internal/ui's upload route).
func (d *webDriver) UserSendsImage(t testing.TB, tg channels.Target, caption string, data []byte) channeltest.Event {
	ctx, cancel := context.WithTimeout(context.Background(), channeltest.Timeout)
	defer cancel()
	if _, err := d.a.PostFile(ctx, tg.ChatID, "operator", caption, channels.Media{Name: "photo.jpg", MIME: "image/jpeg", Data: data}); err != nil {
		t.Fatalf("PostFile: %v", err)
	}
	return nil
}

// Files reads the file messages of tg's conversation (the link's text is
// the name; the console serves the bytes from the workspace, so none here).
func (d *webDriver) Files(tg channels.Target) []channeltest.SentFile {
	var out []channeltest.SentFile
	for _, ev := range d.a.History(tg.ChatID) {
		body, ok := strings.CutPrefix(ev.Text, FilePrefix+"[")
		if ev.Kind != KindMessage || !ok {
			continue
		}
		name, rest, _ := strings.Cut(body, "](")
		_, caption, _ := strings.Cut(rest, "\n\n")
		out = append(out, channeltest.SentFile{Name: unescapeMarkdown(name), Caption: unescapeMarkdown(caption)})
	}
	return out
}

func unescapeMarkdown(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (d *webDriver) Sent(tg channels.Target) []string {
	var out []string
	for _, ev := range d.a.History(tg.ChatID) {
		if ev.Kind == KindMessage {
			out = append(out, ev.Text)
		}
	}
	return out
}

// TypingTarget opens a new conversation and subscribes to it, as a browser
// view does, to count the typing events it gets.
func (d *webDriver) TypingTarget(t testing.TB) channels.Target {
	d.mu.Lock()
	conv := fmt.Sprintf("typing-%d", len(d.typing)+1)
	d.typing[conv] = 0
	d.mu.Unlock()
	events, cancel := d.a.Subscribe(conv)
	t.Cleanup(cancel)
	go func() {
		for ev := range events {
			if ev.Kind == KindTyping && ev.Text == TypingOn {
				d.mu.Lock()
				d.typing[conv]++
				d.mu.Unlock()
			}
		}
	}()
	return channels.Target{Channel: Name, ChatID: conv}
}

func (d *webDriver) Typing(tg channels.Target) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.typing[tg.ChatID], d.a.Typing(tg.ChatID)
}

func (d *webDriver) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.WaitUntil(t, channeltest.Timeout, 5*time.Millisecond, "web: "+what, func() (bool, <-chan struct{}) {
		return cond(), nil
	})
}
