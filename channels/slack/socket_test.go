package slack

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

func TestRedeliveredEnvelopeKeepsMessageID(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	_, env := f.UserDMs("U1", "are you there?")
	f.WaitAcked(t, env, wait)
	retry := f.Redeliver(env)
	msgs := r.sink.waitN(t, 2)
	if msgs[0].MessageID != msgs[1].MessageID || msgs[0].Text != msgs[1].Text {
		t.Fatalf("redelivery produced %q / %q, want the same MessageID", msgs[0].MessageID, msgs[1].MessageID)
	}
	f.WaitAcked(t, retry, wait)
}

func TestAckOnlyAfterHandleReturns(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	sink := newRecorder()
	sink.block = make(chan struct{})
	sink.entered = make(chan struct{}, 1)
	start(t, f, testOptions(f), sink)

	_, env := f.UserDMs("U1", "persist me first")
	select {
	case <-sink.entered:
	case <-time.After(wait):
		t.Fatal("Handle was never called")
	}
	// Handle is running (the inbox write, in the real handler). Hold it a
	// little so an early ack would have time to reach the server.
	time.Sleep(50 * time.Millisecond)
	if un := f.Unacked(); !slices.Contains(un, env) {
		t.Fatalf("envelope %s acked while Handle was still running (acks=%v)", env, f.Acks())
	}
	released := time.Now()
	close(sink.block)
	f.WaitAcked(t, env, wait)
	if ack := f.Acks()[0]; ack.At.Before(released) {
		t.Fatalf("ack read at %v, before Handle was released at %v", ack.At, released)
	}
}

func TestHandleErrorLeavesEnvelopeUnacked(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	sink := newRecorder()
	sink.fail = func(m channels.Message) error {
		if m.Text == "disk full" {
			return errors.New("inbox write failed")
		}
		return nil
	}
	start(t, f, testOptions(f), sink)

	_, bad := f.UserDMs("U1", "disk full")
	_, good := f.UserDMs("U1", "second")
	f.WaitAcked(t, good, wait) // envelopes are handled in order: the first is done
	if un := f.Unacked(); !slices.Equal(un, []string{bad}) {
		t.Fatalf("unacked = %v, want only %s (Handle failed for it)", un, bad)
	}
	// Slack redelivers it; this time Handle succeeds and it is acked.
	sink.mu.Lock()
	sink.fail = nil
	sink.mu.Unlock()
	retry := f.Redeliver(bad)
	f.WaitAcked(t, retry, wait)
}

func TestDisconnectReconnectsAndEventsStillArrive(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	f.WaitConnections(t, 1, wait)
	waitReady(t, r.c)

	f.Disconnect("refresh_requested")
	f.WaitConnections(t, 2, wait)
	_, env := f.UserDMs("U1", "after the refresh")
	if got := r.sink.waitN(t, 1)[0]; got.Text != "after the refresh" {
		t.Fatalf("got %q", got.Text)
	}
	f.WaitAcked(t, env, wait)
	if ack := f.Acks()[0]; ack.Conn != 2 {
		t.Fatalf("ack on connection %d, want the new connection 2", ack.Conn)
	}
	if n := r.c.maxLiveConns.Load(); n != 1 {
		t.Fatalf("client held %d connections at once, want 1", n)
	}
	waitReady(t, r.c)
}

func TestDroppedConnectionReconnects(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	r := start(t, f, testOptions(f), newRecorder())
	f.WaitConnections(t, 1, wait)
	f.DropConnections()
	f.WaitConnections(t, 2, wait)
	_, env := f.UserDMs("U1", "still here")
	r.sink.waitN(t, 1)
	f.WaitAcked(t, env, wait)
}

func TestWatchdogReplacesConnectionWithoutHello(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	f.HoldHello(true) // connections come up, pings flow, but Slack never says hello
	r := start(t, f, testOptions(f), newRecorder())

	f.WaitConnections(t, 2, wait) // the watchdog gave up on the first one
	if r.c.Ready() {
		t.Fatal("Ready without a hello")
	}
	if n := r.c.maxLiveConns.Load(); n != 1 {
		t.Fatalf("client held %d connections at once, want the old one closed first", n)
	}
	f.HoldHello(false)
	waitReady(t, r.c)
	_, env := f.UserDMs("U1", "hello again")
	r.sink.waitN(t, 1)
	f.WaitAcked(t, env, wait)
}

func TestWatchdogReplacesSilentConnection(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	opts := testOptions(f)
	opts.PingInterval = time.Minute // socketmode's own ping check stays out of the way
	opts.WatchdogTimeout = 200 * time.Millisecond
	r := start(t, f, opts, newRecorder())
	f.WaitConnections(t, 1, wait)
	waitReady(t, r.c)

	f.StopPings(true) // hello was received; now nothing at all arrives
	f.WaitConnections(t, 2, wait)
	f.StopPings(false)
	_, env := f.UserDMs("U1", "back again")
	if got := r.sink.waitN(t, 1)[0]; got.Text != "back again" {
		t.Fatalf("got %q", got.Text)
	}
	f.WaitAcked(t, env, wait)
	if n := r.c.maxLiveConns.Load(); n != 1 {
		t.Fatalf("client held %d connections at once, want 1", n)
	}
}

func TestReadyFollowsConnection(t *testing.T) {
	f := fakeslack.New(t, fakeslack.Options{})
	c, err := New(testOptions(f))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ready() {
		t.Fatal("ready before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx, newRecorder()) }()
	waitReady(t, c)
	if got := c.BotUserID(); got != f.BotUserID() {
		t.Fatalf("BotUserID = %q", got)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return after cancel")
	}
	if c.Ready() {
		t.Fatal("still ready after Run returned")
	}
	if n := c.liveConns.Load(); n != 0 {
		t.Fatalf("%d connections left open after Run returned", n)
	}
}
