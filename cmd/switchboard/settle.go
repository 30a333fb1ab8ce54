package main

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// releaseStartupMemory returns start-up garbage to the operating system once,
// when the daemon is ready and every channel connected (or after limit, if
// one never connects); it returns at once when ctx ends.
//
// Start-up allocates far more than an idle daemon keeps (package
// initialization, config parsing, three TLS handshakes, the platforms' READY
// payloads); the Go runtime would otherwise hand those pages back only
// gradually, so the idle daemon showed ~1.2 MiB more anonymous memory than it
// uses. One forced collection at this point costs a few milliseconds of CPU
// once. GOGC and GOMEMLIMIT stay the operator's (the environment's) choice.
func releaseStartupMemory(ctx context.Context, d *daemon.Daemon) {
	settle(ctx, d.Ready(), func() bool { return allConnected(d) }, 50*time.Millisecond, 30*time.Second, debug.FreeOSMemory)
}

// settle calls release once ready is closed and connected reports true
// (polled every poll), or limit after ready; never when ctx ends first.
func settle(ctx context.Context, ready <-chan struct{}, connected func() bool, poll, limit time.Duration, release func()) {
	select {
	case <-ready:
	case <-ctx.Done():
		return
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for !connected() {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			release()
			return
		case <-tick.C:
		}
	}
	release()
}

func allConnected(d *daemon.Daemon) bool {
	for _, s := range d.ChannelStates() {
		if !s.Ready {
			return false
		}
	}
	return true
}
