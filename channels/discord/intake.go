package discord

import (
	"errors"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels/lanes"
)

// Intake: one lane per Discord channel id (the cursor's key, so a thread is
// its own lane), served by a bounded pool of workers (channels/lanes). A
// channel's live messages and catch-ups run one at a time, in arrival order,
// so its cursor only advances in order; different channels are handed to the
// sink concurrently. Submission never blocks the gateway reader: a full lane
// or too many busy channels mark the channel behind and it is caught up from
// history later (in its own lane, after its backlog).

// intake is the per-Run lane pool and its catch-up bookkeeping.
type intake struct {
	lanes *lanes.Lanes

	mu      sync.Mutex
	queued  map[string]bool // channels with a catch-up queued and not started
	refused int             // submissions refused since the last warning
	warned  time.Time
}

// newIntake starts the lanes of run r.
func (r *run) newIntake() *intake {
	in := &intake{queued: map[string]bool{}}
	in.lanes = lanes.New(lanes.Options{
		Workers:  r.c.opts.IntakeWorkers,
		Depth:    r.c.opts.IntakeDepth,
		MaxLanes: r.c.opts.IntakeMaxChats,
		// A live message refused because its lane was full: once the lane's
		// backlog is done, fetch what came after the channel's cursor.
		OnOverflow: func(id string) {
			r.c.markBehind(id)
			r.catchUp(id)
		},
	})
	return in
}

// submitLive queues a gateway MESSAGE_CREATE in its channel's lane. Called
// from discordgo's event goroutine only, so a channel's messages are queued
// in arrival order.
func (r *run) submitLive(m *discordgo.Message) {
	c := r.c
	if m.Author == nil || m.ChannelID == "" || m.ID == "" {
		return
	}
	if m.GuildID != "" && len(c.guilds) > 0 && !c.guilds[m.GuildID] {
		return
	}
	err := r.in.lanes.TrySubmit(m.ChannelID, func() { r.live(m) })
	switch {
	case err == nil, errors.Is(err, lanes.ErrClosed):
		// Closed: Run is ending; the channel's saved cursor brings it back.
	case errors.Is(err, lanes.ErrLaneFull):
		// The lane's overflow catch-up runs after its backlog.
		r.in.noteRefused(r, m.ChannelID, err)
	default:
		// No lane, so nothing of this channel is queued or running: start
		// tracking just before m (saved now, as live does) and let the retry
		// loop catch the channel up.
		if _, known := c.cursorOf(m.ChannelID); !known {
			c.setCursor(m.ChannelID, snowPred(m.ID))
			c.saveCursors(r.ctx)
		}
		c.markBehind(m.ChannelID)
		r.in.noteRefused(r, m.ChannelID, err)
	}
}

// submitCatchUp queues a catch-up of channel id from its cursor, unless one
// is already queued. A refusal leaves the channel behind for the retry loop.
func (r *run) submitCatchUp(id string) {
	in := r.in
	in.mu.Lock()
	if in.queued[id] {
		in.mu.Unlock()
		return
	}
	in.queued[id] = true
	in.mu.Unlock()
	err := in.lanes.TrySubmit(id, func() {
		in.mu.Lock()
		delete(in.queued, id)
		in.mu.Unlock()
		r.catchUp(id)
	})
	if err != nil {
		in.mu.Lock()
		delete(in.queued, id)
		in.mu.Unlock()
		if !errors.Is(err, lanes.ErrClosed) {
			r.c.markBehind(id)
		}
	}
}

// catchUpAll queues a catch-up of every tracked channel (after READY/RESUMED).
func (r *run) catchUpAll() {
	for _, id := range r.c.trackedChannels(false) {
		r.submitCatchUp(id)
	}
}

// retryLoop queues a catch-up of the channels left behind every CatchUpRetry
// until Run ends.
func (r *run) retryLoop() {
	t := time.NewTicker(r.c.opts.CatchUpRetry)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			for _, id := range r.c.trackedChannels(true) {
				r.submitCatchUp(id)
			}
		}
	}
}

// noteRefused logs refused submissions, at most once a second.
func (in *intake) noteRefused(r *run, chat string, err error) {
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
	r.c.log.Warn("discord: intake is full; the channel will be caught up from history",
		"chat", chat, "reason", err, "refused", n, "busy_chats", busy, "queued", queued)
}
