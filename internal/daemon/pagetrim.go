package daemon

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/pagetrim"
)

// defaultIdleTrimEvery is how often an idle daemon hands memory back.
const defaultIdleTrimEvery = 30 * time.Second

// releaseIdleMemory keeps an idle daemon's resident set to what it runs.
// Once every channel has connected (or 30 s have passed), and after that at
// every IdleTrimEvery in which no message arrived and no turn ran, it returns
// the heap the garbage collector can free to the system (debug.FreeOSMemory)
// and hands the executable's pages back (package pagetrim), and runs Go's
// default P count until the next message (procscale.go). A daemon with
// traffic is left alone: the pages it runs stay mapped.
func (d *Daemon) releaseIdleMemory(ctx context.Context) {
	const poll, startupBound = 100 * time.Millisecond, 30 * time.Second
	bound := time.NewTimer(startupBound)
	defer bound.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
wait:
	for !d.channelsConnected() {
		select {
		case <-ctx.Done():
			return
		case <-bound.C:
			break wait
		case <-tick.C:
		}
	}
	last := d.handler.Stats()
	d.releaseMemory(func() bool { return d.handler.Stats().Received == last.Received })
	every := d.opts.IdleTrimEvery
	if every <= 0 {
		every = defaultIdleTrimEvery
	}
	tick.Reset(every)
	last = d.handler.Stats()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := d.handler.Stats()
		idle := idleSince(last, now)
		last = now
		if idle {
			d.releaseMemory(func() bool { return d.handler.Stats().Received == now.Received })
		}
	}
}

// releaseMemory returns the freed heap and hands the executable's pages
// back. d.opts.OnMemoryRelease (tests) hears of it.
//
// stillIdle reports whether no message came in since the daemon decided it
// was idle; the P count is lowered only then.
func (d *Daemon) releaseMemory(stillIdle func() bool) {
	d.procs.idle(stillIdle) // first: the Ps it drops give their cached spans back
	debug.FreeOSMemory()
	n, err := pagetrim.Release()
	if err != nil {
		d.log.Debug("release idle memory", "err", err)
	} else {
		d.log.Debug("released idle memory", "mapped_bytes", n)
	}
	if d.opts.OnMemoryRelease != nil {
		d.opts.OnMemoryRelease()
	}
}

func (d *Daemon) channelsConnected() bool {
	for _, s := range d.ChannelStates() {
		if !s.Ready {
			return false
		}
	}
	return true
}

// idleSince reports whether the daemon was idle between two looks at its
// handler: no message came in, none is being taken in (its inbox write can
// outlast an interval on a slow disk, before its session is active), no
// turn ended and no session has a turn queued or running.
func idleSince(last, now hub.HandlerStats) bool {
	return now.Received == last.Received && now.Intake == 0 && now.Turns == last.Turns && now.ActiveSessions == 0
}
