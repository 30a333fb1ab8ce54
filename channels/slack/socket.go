package slack

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/switchboard-bot/switchboard/channels"
)

// connTracker observes the raw network connections of one socketmode client:
// when a byte last arrived (pings included) and how many are open.
type connTracker struct {
	lastRead atomic.Int64  // unix nanos
	live     *atomic.Int32 // open connections of the Adapter (all its clients)
	maxLive  *atomic.Int32 // the most that were ever open at once
}

type trackedConn struct {
	net.Conn
	t    *connTracker
	once sync.Once
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.t.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.t.live.Add(-1) })
	return c.Conn.Close()
}

func (t *connTracker) dialer(handshake time.Duration) *websocket.Dialer {
	nd := &net.Dialer{Timeout: handshake, KeepAlive: 30 * time.Second}
	return &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: handshake,
		WriteBufferSize:  32 * 1024, // as socketmode's default: above Slack's 20KB frame limit
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			n := t.live.Add(1)
			for m := t.maxLive.Load(); n > m && !t.maxLive.CompareAndSwap(m, n); m = t.maxLive.Load() {
			}
			t.lastRead.Store(time.Now().UnixNano())
			return &trackedConn{Conn: conn, t: t}, nil
		},
	}
}

// errRestart is how the watchdog asks runSocket for a fresh client.
var errRestart = errors.New("slack: socket mode watchdog restart")

// runSocket runs socketmode clients one after another until ctx ends or Slack
// rejects the app token.
func (c *Adapter) runSocket(ctx context.Context, sink channels.Sink) error {
	backoff := c.opts.ReconnectMin
	for {
		healthy, err := c.runClient(ctx, sink)
		c.ready.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, errRestart) {
			return err
		}
		if healthy {
			backoff = c.opts.ReconnectMin
		}
		c.log.Warn("slack: socket mode connection looks dead; reconnecting", "reason", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(backoff*2, c.opts.ReconnectMax)
	}
}

// clientState is what runClient knows about its client's current connection.
type clientState struct {
	connected   bool
	connectedAt time.Time
	hello       bool
	healthy     bool // a hello arrived at some point
}

// runClient runs one socketmode client. It returns errRestart (wrapped) when
// the watchdog fired, nil when ctx ended, or a fatal error; healthy reports
// whether the client ever got a hello. The client is fully stopped on return.
func (c *Adapter) runClient(ctx context.Context, sink channels.Sink) (healthy bool, err error) {
	tracker := &connTracker{live: &c.liveConns, maxLive: &c.maxLiveConns}
	smc := socketmode.New(c.api,
		socketmode.OptionPingInterval(c.opts.PingInterval),
		socketmode.OptionDialer(tracker.dialer(c.opts.HandshakeTimeout)),
		socketmode.OptionLog(slogWriter{c.log}),
	)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- smc.RunContext(runCtx) }()
	in := c.newSocketIntake(runCtx)
	stopped := false
	defer func() {
		cancel()
		// Queued envelopes are abandoned unacknowledged (Slack redelivers
		// them); running ones finish before the client is gone.
		if n := in.lanes.Close(); n > 0 {
			c.log.Info("slack: client stopping; queued envelopes left for Slack to redeliver", "envelopes", n)
		}
		if !stopped {
			<-done
		}
	}()

	tick := max(min(c.opts.HelloTimeout, c.opts.WatchdogTimeout)/4, 5*time.Millisecond)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()

	var st clientState
	for {
		select {
		case <-ctx.Done():
			return st.healthy, nil
		case err := <-done:
			stopped = true
			if ctx.Err() != nil {
				return st.healthy, nil
			}
			return st.healthy, describeAuthError("app-level token", "SLACK_APP_TOKEN", "apps.connections.open", err)
		case now := <-ticker.C:
			if err := c.watchdog(now, &st, tracker); err != nil {
				return st.healthy, err
			}
		case evt := <-smc.Events:
			c.onEvent(ctx, in, smc, sink, evt, &st)
		}
	}
}

// watchdog returns errRestart (wrapped) when the current connection brought
// no hello within HelloTimeout or nothing at all within WatchdogTimeout.
func (c *Adapter) watchdog(now time.Time, st *clientState, tracker *connTracker) error {
	if !st.connected {
		return nil
	}
	if !st.hello && now.Sub(st.connectedAt) > c.opts.HelloTimeout {
		return errors.Join(errRestart, errors.New("no hello after connecting"))
	}
	if last := time.Unix(0, tracker.lastRead.Load()); now.Sub(last) > c.opts.WatchdogTimeout {
		return errors.Join(errRestart, errors.New("nothing received"))
	}
	return nil
}

// onEvent follows the connection's state through one socketmode event and
// queues envelopes for the sink (intake.go).
func (c *Adapter) onEvent(ctx context.Context, in *socketIntake, smc *socketmode.Client, sink channels.Sink, evt socketmode.Event, st *clientState) {
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		c.ready.Store(false)
		st.connected, st.hello = false, false
	case socketmode.EventTypeConnected:
		st.connected, st.connectedAt, st.hello = true, time.Now(), false
	case socketmode.EventTypeHello:
		st.hello, st.healthy = true, true
		c.ready.Store(true)
		c.log.Info("slack: socket mode connected")
	case socketmode.EventTypeConnectionError:
		c.ready.Store(false)
		st.connected = false
		if ce, ok := evt.Data.(*slackapi.ConnectionErrorEvent); ok {
			c.log.Warn("slack: socket mode connection failed", "attempt", ce.Attempt, "backoff", ce.Backoff, "err", ce.ErrorObj)
		}
	case socketmode.EventTypeInvalidAuth:
		c.ready.Store(false)
	case socketmode.EventTypeIncomingError:
		c.log.Debug("slack: socket read error", "err", evt.Data)
	case socketmode.EventTypeErrorBadMessage:
		c.ackBadMessage(ctx, smc, evt)
	case socketmode.EventTypeEventsAPI:
		c.submitEnvelope(ctx, in, smc, sink, evt)
	case socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		// Not used by Switchboard; acknowledge so Slack stops retrying.
		if evt.Request != nil {
			_ = smc.AckCtx(ctx, evt.Request.EnvelopeID, nil)
		}
	}
}

// handleEnvelope turns an events_api envelope into a message, hands it to the
// sink and acknowledges it (with ackCtx, the client's context) only when
// Handle succeeded (or nothing needed handling). It runs in the envelope's lane.
func (c *Adapter) handleEnvelope(ctx, ackCtx context.Context, smc *socketmode.Client, sink channels.Sink, evt socketmode.Event) {
	if evt.Request == nil {
		return
	}
	req := evt.Request
	ev, ok := evt.Data.(slackevents.EventsAPIEvent)
	if ok {
		msg, deliver := c.normalize(ctx, ev)
		if deliver {
			if err := sink.Handle(ctx, msg); err != nil {
				c.log.Warn("slack: message not persisted; leaving envelope unacknowledged so Slack redelivers",
					"message_id", msg.MessageID, "envelope", req.EnvelopeID, "err", err)
				return
			}
		}
	}
	if req.RetryAttempt > 0 {
		c.log.Debug("slack: acknowledged a redelivered envelope", "envelope", req.EnvelopeID,
			"retry_attempt", req.RetryAttempt, "retry_reason", req.RetryReason)
	}
	if err := smc.AckCtx(ackCtx, req.EnvelopeID, nil); err != nil {
		c.log.Warn("slack: ack failed; Slack will redeliver the envelope", "envelope", req.EnvelopeID, "err", err)
	}
}

// ackBadMessage acknowledges an envelope socketmode could not parse (for
// example an event type slack-go does not know): it can never be handled, and
// leaving it unacked would only make Slack retry it.
func (c *Adapter) ackBadMessage(ctx context.Context, smc *socketmode.Client, evt socketmode.Event) {
	bad, ok := evt.Data.(*socketmode.ErrorBadMessage)
	if !ok {
		return
	}
	var env struct {
		EnvelopeID string `json:"envelope_id"`
		Type       string `json:"type"`
	}
	if json.Unmarshal(bad.Message, &env) != nil || env.EnvelopeID == "" {
		c.log.Debug("slack: unparseable socket message", "err", bad.Cause)
		return
	}
	c.log.Debug("slack: acknowledging an envelope that cannot be parsed", "type", env.Type, "err", bad.Cause)
	_ = smc.AckCtx(ctx, env.EnvelopeID, nil)
}
