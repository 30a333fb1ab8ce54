package slack

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/lanes"
)

// Intake: Socket Mode envelopes go to the lane of their Slack channel
// (channels/lanes), served by a bounded pool of workers: one channel's
// envelopes are handled and acknowledged one at a time, in arrival order,
// while different channels are handed to the sink concurrently. An envelope
// is acknowledged only from inside its job, after sink.Handle returned nil;
// one the lanes refuse (full) or abandon (the client stopped) stays
// unacknowledged, and Slack redelivers it. In HTTP mode each request already
// has its goroutine; a KeyedMutex serializes requests per channel.

// Defaults for the intake bounds.
const (
	DefaultIntakeWorkers  = 16
	DefaultIntakeDepth    = 64
	DefaultIntakeMaxChats = 1024
)

// socketIntake is the lane pool of one socketmode client.
type socketIntake struct {
	lanes  *lanes.Lanes
	ackCtx context.Context // the client's context: acks stop with it

	mu      sync.Mutex
	refused int
	warned  time.Time
}

func (c *Adapter) newSocketIntake(ackCtx context.Context) *socketIntake {
	return &socketIntake{
		ackCtx: ackCtx,
		lanes: lanes.New(lanes.Options{
			Workers:  c.opts.IntakeWorkers,
			Depth:    c.opts.IntakeDepth,
			MaxLanes: c.opts.IntakeMaxChats,
		}),
	}
}

// eventChat is the Slack channel an Events API event belongs to ("" for
// events without one: they share one lane).
func eventChat(ev slackevents.EventsAPIEvent) string {
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		return e.Channel
	case *slackevents.AppMentionEvent:
		return e.Channel
	case *slackevents.AssistantThreadStartedEvent:
		return e.AssistantThread.ChannelID
	}
	return ""
}

// submitEnvelope queues an events_api envelope in its channel's lane. A
// refused envelope is left unacknowledged for Slack to redeliver.
func (c *Adapter) submitEnvelope(ctx context.Context, in *socketIntake, smc *socketmode.Client, sink channels.Sink, evt socketmode.Event) {
	if evt.Request == nil {
		return
	}
	var chat string
	if ev, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
		chat = eventChat(ev)
	}
	err := in.lanes.TrySubmit(chat, func() { c.handleEnvelope(ctx, in.ackCtx, smc, sink, evt) })
	if err == nil || errors.Is(err, lanes.ErrClosed) {
		return
	}
	in.mu.Lock()
	in.refused++
	now := time.Now()
	if now.Sub(in.warned) < time.Second {
		in.mu.Unlock()
		return
	}
	n := in.refused
	in.refused, in.warned = 0, now
	in.mu.Unlock()
	busy, queued := in.lanes.Stats()
	c.log.Warn("slack: intake is full; leaving the envelope unacknowledged so Slack redelivers it",
		"chat", chat, "envelope", evt.Request.EnvelopeID, "reason", err, "refused", n, "busy_chats", busy, "queued", queued)
}
