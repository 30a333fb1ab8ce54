package web

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// Format keeps the model's Markdown (the console renders it, sanitized) and
// splits it at MaxChunk runes without breaking code fences.
func (a *Adapter) Format(md string) []channels.Chunk {
	var out []channels.Chunk
	for _, s := range markup.Split(md, a.opts.MaxChunk) {
		out = append(out, channels.Chunk{Text: s, Plain: s})
	}
	return out
}

// Send records a message in its conversation's history, shows it to the
// conversation's subscribers and returns its id. A target that is not a
// valid conversation, or empty text, is a permanent error.
func (a *Adapter) Send(_ context.Context, out channels.Outgoing) (string, error) {
	conv := out.Target.ChatID
	if err := CheckConv(conv); err != nil {
		return "", channels.Permanent(err)
	}
	text := out.Text
	if strings.TrimSpace(text) == "" {
		text = out.Plain
	}
	if strings.TrimSpace(text) == "" {
		return "", channels.Permanent(errors.New("web: empty message"))
	}
	ev := Event{Kind: KindMessage, ID: a.nextID(), Text: text, Time: a.opts.Now()}
	a.mu.Lock()
	ev.Live = a.typing[conv] > 0
	a.record(conv, ev)
	over := a.publish(conv, ev)
	a.mu.Unlock()
	a.closeAll(over)
	return ev.ID, nil
}

// Edit replaces the text of a message sent in this process. An id the
// adapter never issued (another process's, a typo) is a permanent error;
// a message that aged out of History is still edited in live views.
func (a *Adapter) Edit(_ context.Context, target channels.Target, messageID string, text string) error {
	conv := target.ChatID
	if err := CheckConv(conv); err != nil {
		return channels.Permanent(err)
	}
	if strings.TrimSpace(text) == "" {
		return channels.Permanent(errors.New("web: empty message"))
	}
	if !a.issued(messageID) {
		return channels.Permanent(fmt.Errorf("web: message %q was not sent by this process", clip(messageID)))
	}
	ev := Event{Kind: KindEdit, ID: messageID, Text: text, Time: a.opts.Now()}
	a.mu.Lock()
	ev.Live = a.typing[conv] > 0
	a.applyEdit(conv, messageID, ev)
	over := a.publish(conv, ev)
	a.mu.Unlock()
	a.closeAll(over)
	return nil
}

// issued reports whether id is one of this adapter's message ids.
func (a *Adapter) issued(id string) bool {
	rest, ok := strings.CutPrefix(id, a.epoch+"-")
	if !ok || rest == "" {
		return false
	}
	var n int64
	for _, r := range rest {
		if r < '0' || r > '9' || n > a.seq.Load() {
			return false
		}
		n = n*10 + int64(r-'0')
	}
	return n >= 1 && n <= a.seq.Load()
}

// WriteDelta shows streamed text to the conversation's subscribers.
func (a *Adapter) WriteDelta(target channels.Target, text string) {
	if text == "" {
		return
	}
	a.emit(target.ChatID, Event{Kind: KindDelta, Text: text, Time: a.opts.Now()})
}

// ResetDelta tells the subscribers that the streamed text was not the answer.
func (a *Adapter) ResetDelta(target channels.Target) {
	a.emit(target.ChatID, Event{Kind: KindReset, Time: a.opts.Now()})
}

// StartTyping shows the typing indicator in the conversation's live views
// until stop is called (idempotent); messages and edits meanwhile are Live.
// Indicators nest: "off" goes out when the last one stops. It starts no
// goroutine.
func (a *Adapter) StartTyping(_ context.Context, target channels.Target) (stop func()) {
	conv := target.ChatID
	a.mu.Lock()
	a.typing[conv]++
	over := a.publish(conv, Event{Kind: KindTyping, Text: TypingOn, Time: a.opts.Now()})
	a.mu.Unlock()
	a.closeAll(over)
	var once sync.Once
	return func() { once.Do(func() { a.stopTyping(conv) }) }
}

// stopTyping ends one typing indicator of conv; the last one ends the
// conversation's drafts and tells the live views.
func (a *Adapter) stopTyping(conv string) {
	a.mu.Lock()
	a.typing[conv]--
	var over []*subscriber
	if a.typing[conv] <= 0 {
		delete(a.typing, conv)
		if c := a.convs[conv]; c != nil {
			for i := range c.msgs {
				c.msgs[i].Live = false
			}
		}
		over = a.publish(conv, Event{Kind: KindTyping, Text: TypingOff, Time: a.opts.Now()})
	}
	a.mu.Unlock()
	a.closeAll(over)
}

// Typing reports whether a typing indicator of conv is on (a turn runs).
func (a *Adapter) Typing(conv string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.typing[conv] > 0
}
