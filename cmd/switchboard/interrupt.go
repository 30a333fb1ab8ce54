package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// interrupts turns signals into the daemon's shutdown until done closes.
//
// The first SIGINT or SIGTERM starts the graceful shutdown and says on stderr
// what it waits for and for how long. A second one cancels the running
// answers and quits at once. A shutdown started by SIGINT (Ctrl-C: the
// operator) finishes the answers it cancels instead of replaying them at the
// next start; after a SIGTERM (a service manager's stop) they are replayed.
func (a *app) interrupts(sigs <-chan os.Signal, done <-chan struct{}, d *daemon.Daemon, screen *console.Screen, cancel context.CancelFunc) {
	say := func(format string, args ...any) {
		if screen != nil {
			screen.Break() // end a half-printed answer line so the notice shows now
		}
		fmt.Fprintf(a.stderr, format, args...)
	}
	first := true
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			if !first {
				say("switchboard: canceling the running answers and quitting now\n")
				d.Interrupt(true)
				continue
			}
			first = false
			if sig == os.Interrupt {
				d.Interrupt(false)
			}
			if n := d.Running(); n > 0 {
				say("\nswitchboard: shutting down: waiting up to %s for %d running answer(s) to finish; press Ctrl-C again to cancel them and quit now\n",
					d.ShutdownGrace(), n)
			} else {
				say("\nswitchboard: shutting down\n")
			}
			cancel()
		}
	}
}

// notifyStop delivers SIGINT and SIGTERM to the returned channel.
func notifyStop() (<-chan os.Signal, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	return sigs, func() { signal.Stop(sigs) }
}
