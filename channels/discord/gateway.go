package discord

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/switchboard-bot/switchboard/channels"
)

// run is the state of one Run call.
type run struct {
	c    *Adapter
	ctx  context.Context // canceled when Run returns
	sink channels.Sink

	dial     *trackingDialer
	gw       *discordgo.Session
	gotReady atomic.Bool  // READY/RESUMED seen on the current connection
	lastSeen atomic.Int64 // unix nanos of the last dispatch

	disconnected chan struct{}
	in           *intake
}

// loop opens the gateway, waits for the connection to end, and reopens.
func (r *run) loop() error {
	c := r.c
	backoff := c.opts.ReconnectMin
	failures := 0
	for {
		if r.ctx.Err() != nil {
			return nil
		}
		if r.gw == nil {
			r.gw = r.newGateway()
		}
		r.gotReady.Store(false)
		drain(r.disconnected)
		err := r.open()
		if r.ctx.Err() != nil {
			return nil
		}
		if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			if werr := r.watch(); werr != nil {
				c.log.Error(werr.Error())
				return werr
			}
			if r.ctx.Err() != nil {
				return nil
			}
			if r.gotReady.Load() {
				failures, backoff = 0, c.opts.ReconnectMin
				c.log.Info("discord: gateway disconnected, resuming")
				if !r.settleBeforeResume() {
					return nil
				}
				continue
			}
			// Closed before READY/RESUMED: start over with a fresh IDENTIFY so
			// a refusal surfaces from Open.
			r.discardGateway()
			err = errors.New("gateway closed the connection before READY")
		} else {
			if ferr := fatalClose(err); ferr != nil {
				c.log.Error(ferr.Error())
				return ferr
			}
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				r.discardGateway()
			}
		}
		failures++
		if c.opts.MaxReconnectFailures > 0 && failures >= c.opts.MaxReconnectFailures {
			return fmt.Errorf("discord: gateway unreachable after %d attempts: %w", failures, err)
		}
		c.log.Warn("discord: gateway connect failed, retrying", "err", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(backoff*2, c.opts.ReconnectMax)
	}
}

// resumeSettle is how long the adapter waits after a disconnect before it
// resumes on a new connection.
//
// discordgo's heartbeat goroutine of the lost connection can still be
// running: when the tick came just before the drop, it waits for the lock
// Session.Close holds for a second, then its heartbeat fails (the close
// frame is sent) and it calls Session.Close again (wsapi.go, heartbeat).
// Resumed on a new connection by then, that Close sends the new one a 1000
// close frame — which ends the session on Discord: the resume is lost and
// the adapter must IDENTIFY again, or it sees the stale disconnect before
// RESUMED. Waiting lets that Close find no connection; the disconnect it
// reports is drained before the next Open.
const resumeSettle = 200 * time.Millisecond

// settleBeforeResume waits resumeSettle; false when Run is ending.
func (r *run) settleBeforeResume() bool {
	t := time.NewTimer(resumeSettle)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// fatalClose turns close codes that reconnecting cannot fix into errors.
func fatalClose(err error) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	switch ce.Code {
	case 4014:
		return ErrMessageContentRefused
	case 4004:
		return errors.New("discord: the gateway rejected the bot token (close 4004 authentication failed)")
	case 4010, 4011, 4012, 4013:
		return fmt.Errorf("discord: the gateway closed the connection with %d (%s); not retrying", ce.Code, ce.Text)
	}
	return nil
}

// open runs discordgo's Open, aborting it on ctx or after OpenTimeout (Open
// itself has no deadline once the WebSocket handshake is done).
func (r *run) open() error {
	done := make(chan struct{})
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		t := time.NewTimer(r.c.opts.OpenTimeout)
		defer t.Stop()
		select {
		case <-done:
		case <-r.ctx.Done():
			r.dial.abort()
		case <-t.C:
			r.dial.abort()
		}
	}()
	err := r.gw.Open()
	close(done)
	<-watcher
	return err
}

// watch blocks while connected: nil on disconnect or ctx end, an error when
// the connection is deaf.
func (r *run) watch() error {
	tick := time.NewTicker(r.c.opts.WatchdogInterval)
	defer tick.Stop()
	r.lastSeen.Store(time.Now().UnixNano())
	for {
		select {
		case <-r.ctx.Done():
			return nil
		case <-r.disconnected:
			return nil
		case <-tick.C:
			last := time.Unix(0, r.lastSeen.Load())
			r.gw.RLock()
			ack := r.gw.LastHeartbeatAck
			r.gw.RUnlock()
			if ack.After(last) {
				last = ack
			}
			if silent := time.Since(last); silent > r.c.opts.WatchdogTimeout {
				return fmt.Errorf("discord: gateway connection is deaf: no events and no heartbeat ACKs for %s (watchdog %s); restarting the channel",
					silent.Round(time.Millisecond), r.c.opts.WatchdogTimeout)
			}
		}
	}
}

// closeGateway closes the current discordgo session (discordgo waits about a
// second for the close handshake).
func (r *run) closeGateway() {
	if r.gw != nil {
		_ = r.gw.Close()
	}
}

func (r *run) discardGateway() {
	r.closeGateway()
	r.gw = nil
}

// newGateway builds a discordgo session for the gateway with our handlers.
func (r *run) newGateway() *discordgo.Session {
	c := r.c
	s := c.newSession()
	s.Dialer = &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: c.opts.OpenTimeout,
		NetDialContext:   r.dial.DialContext,
	}
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		r.lastSeen.Store(time.Now().UnixNano())
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Ready) {
		if e.User != nil {
			c.setBotID(e.User.ID)
		}
		for _, ch := range e.PrivateChannels {
			c.rememberChannel(ch)
		}
		r.gotReady.Store(true)
		c.ready.Store(true)
		c.log.Info("discord: gateway ready")
		r.catchUpAll()
	})
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) {
		r.gotReady.Store(true)
		c.ready.Store(true)
		c.log.Info("discord: gateway session resumed")
		r.catchUpAll()
	})
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
		c.ready.Store(false)
		select {
		case r.disconnected <- struct{}{}:
		default:
		}
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.GuildCreate) {
		if e.Guild == nil {
			return
		}
		for _, ch := range e.Channels {
			ch.GuildID = e.ID
			c.rememberChannel(ch)
		}
		for _, ch := range e.Threads {
			ch.GuildID = e.ID
			c.rememberChannel(ch)
		}
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.ThreadCreate) { c.rememberChannel(e.Channel) })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.ChannelCreate) { c.rememberChannel(e.Channel) })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.MessageCreate) {
		if e.Message != nil {
			r.submitLive(e.Message)
		}
	})
	if c.opts.gatewayHook != nil {
		c.opts.gatewayHook(s)
	}
	return s
}

// trackingDialer dials TCP and remembers the last connection so an Open
// that hangs can be aborted.
type trackingDialer struct {
	d    net.Dialer
	mu   sync.Mutex
	conn net.Conn
}

func (t *trackingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := t.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.conn = conn
	t.mu.Unlock()
	return conn, nil
}

func (t *trackingDialer) abort() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != nil {
		_ = t.conn.Close()
	}
}
