package email

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/switchboard-bot/switchboard/channels"
)

// This file is the IMAP session: connect (TLS rules of the URL), log in,
// select the mailbox, keep the cursor, fetch what is new, wait with IDLE or
// by polling.

// fetchBatch is how many new mails one FETCH round reads.
const fetchBatch = 20

// serverURL is a parsed imap.url or smtp.url.
type serverURL struct {
	host, addr  string
	implicitTLS bool // imaps://, smtps://
	loopback    bool // plain text allowed without STARTTLS
}

// parseServerURL accepts <tlsScheme>://host[:port] and
// <plainScheme>://host[:port]; default ports are the schemes' (993, 143,
// 465, 587).
func parseServerURL(raw, tlsScheme, plainScheme string) (serverURL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != tlsScheme && u.Scheme != plainScheme) ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return serverURL{}, fmt.Errorf("%q must be %s://host[:port] or %s://host[:port] (credentials go in username and password)",
			shownURL(raw), tlsScheme, plainScheme)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"imaps": "993", "imap": "143", "smtps": "465", "smtp": "587"}[u.Scheme]
	}
	s := serverURL{host: u.Hostname(), addr: net.JoinHostPort(u.Hostname(), port), implicitTLS: u.Scheme == tlsScheme}
	if ip := net.ParseIP(s.host); ip != nil {
		s.loopback = ip.IsLoopback()
	} else {
		s.loopback = strings.EqualFold(s.host, "localhost")
	}
	return s, nil
}

// shownURL renders a configured URL for a message: without user info.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

// tlsConfig is the TLS configuration for host.
func (a *Adapter) tlsConfig(host string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.opts.TLSConfig != nil {
		cfg = a.opts.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	return cfg
}

// dialIMAP connects and secures the connection as the URL says. The client
// is closed when ctx ends.
func (a *Adapter) dialIMAP(ctx context.Context, h *imapclient.UnilateralDataHandler) (*imapclient.Client, error) {
	u, err := parseServerURL(a.opts.IMAPURL, "imaps", "imap")
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: a.opts.Timeout}
	conn, err := d.DialContext(ctx, "tcp", u.addr)
	if err != nil {
		return nil, fmt.Errorf("connect to IMAP server %s: %w", u.addr, err)
	}
	opts := &imapclient.Options{UnilateralDataHandler: h, TLSConfig: a.tlsConfig(u.host)}
	var c *imapclient.Client
	switch {
	case u.implicitTLS:
		tc := tls.Client(conn, opts.TLSConfig)
		hctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
		err = tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("TLS with IMAP server %s: %w", u.addr, err)
		}
		c = imapclient.New(tc, opts)
	case u.loopback:
		c = imapclient.New(conn, opts)
	default:
		// STARTTLS is required off loopback: NewStartTLS fails when the
		// server does not offer it, and no credentials go out in clear.
		c, err = imapclient.NewStartTLS(conn, opts)
		if err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("STARTTLS with IMAP server %s (required except on loopback): %w", u.addr, err)
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	go func() {
		<-c.Closed()
		stop()
	}()
	return c, nil
}

// cursor is the durable IMAP position of the mailbox.
type cursor struct {
	Validity uint32   `json:"uidvalidity"`
	Next     imap.UID `json:"next_uid"`
	// At is the INTERNALDATE of the last mail passed (the first start's
	// time before any): where reading resumes when UIDVALIDITY changes.
	At time.Time `json:"at"`
}

func (a *Adapter) cursorKey() string {
	u, _ := parseServerURL(a.opts.IMAPURL, "imaps", "imap")
	return "email/cursor/" + u.addr + "/" + a.opts.IMAPUsername + "/" + a.opts.Mailbox
}

func (a *Adapter) loadCursor(ctx context.Context) (cursor, bool, error) {
	b, ok, err := a.opts.KV.KVGet(ctx, a.cursorKey())
	if err != nil || !ok {
		return cursor{}, false, err
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		a.log.Warn("email: the stored IMAP cursor is unreadable; starting at the mailbox's end", "err", err)
		return cursor{}, false, nil
	}
	return c, true, nil
}

func (a *Adapter) saveCursor(ctx context.Context, c cursor) error {
	b, _ := json.Marshal(c)
	if err := a.opts.KV.KVPut(ctx, a.cursorKey(), b); err != nil {
		return fmt.Errorf("save the IMAP cursor: %w", err)
	}
	return nil
}

// session runs one IMAP connection until it fails or ctx ends; progressed
// reports whether it handed on anything (which resets the backoff).
func (a *Adapter) session(ctx context.Context, sink channels.Sink) (progressed bool, err error) {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	h := &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				poke()
			}
		},
	}
	c, err := a.dialIMAP(ctx, h)
	if err != nil {
		return false, err
	}
	defer func() { _ = c.Close() }()
	if err := c.Login(a.opts.IMAPUsername, a.opts.IMAPPassword).Wait(); err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) {
			return false, errFatal{fmt.Errorf("IMAP login as %s rejected: %s", a.opts.IMAPUsername, oneLine(ie.Text))}
		}
		return false, fmt.Errorf("IMAP login: %w", err)
	}
	sel, err := c.Select(a.opts.Mailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) {
			return false, errFatal{fmt.Errorf("IMAP mailbox %q: %s", a.opts.Mailbox, oneLine(ie.Text))}
		}
		return false, fmt.Errorf("select %q: %w", a.opts.Mailbox, err)
	}
	cur, found, err := a.loadCursor(ctx)
	if err != nil {
		return false, fmt.Errorf("load the IMAP cursor: %w", err)
	}
	switch {
	case !found:
		a.log.Info("email: first start on this mailbox: mail already in it is not answered", "mailbox", a.opts.Mailbox, "uidnext", sel.UIDNext)
		// INTERNALDATE has whole seconds: so has At.
		cur = cursor{Validity: sel.UIDValidity, Next: sel.UIDNext, At: a.opts.Now().Truncate(time.Second)}
	case cur.Validity != sel.UIDValidity:
		next, err := a.resync(c, cur.At, sel.UIDNext)
		if err != nil {
			return false, err
		}
		a.log.Warn("email: the mailbox's UIDVALIDITY changed (it was recreated): reading the mail filed since the last one read",
			"mailbox", a.opts.Mailbox, "was", cur.Validity, "now", sel.UIDValidity, "since", cur.At, "from_uid", next)
		cur = cursor{Validity: sel.UIDValidity, Next: next, At: cur.At}
	}
	if cur.Next == 0 {
		cur.Next = 1
	}
	if err := a.saveCursor(ctx, cur); err != nil {
		return false, err
	}
	a.ready.Store(true)
	idle := (c.Caps().Has(imap.CapIdle) || c.Caps().Has(imap.CapIMAP4rev2)) && !a.opts.noIdle
	for {
		n, err := a.catchUp(ctx, c, &cur, sink)
		progressed = progressed || n > 0
		if err != nil {
			return progressed, err
		}
		if err := a.wait(ctx, c, idle, changed); err != nil {
			return progressed, err
		}
	}
}

// wait returns when the mailbox may have changed: an EXISTS during IDLE, a
// poll's NOOP, or IDLE's periodic restart.
func (a *Adapter) wait(ctx context.Context, c *imapclient.Client, idle bool, changed chan struct{}) error {
	select {
	case <-changed: // arrived during the last command
		return nil
	default:
	}
	if !idle {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.Closed():
			return errors.New("the IMAP connection closed")
		case <-changed:
		case <-time.After(a.opts.PollInterval):
		}
		return c.Noop().Wait()
	}
	cmd, err := c.Idle()
	if err != nil {
		return fmt.Errorf("IDLE: %w", err)
	}
	t := time.NewTimer(a.opts.IdleRestart)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-c.Closed():
	case <-changed:
	case <-t.C:
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := cmd.Close(); err != nil {
		return fmt.Errorf("end IDLE: %w", err)
	}
	return cmd.Wait()
}

// catchUp hands every mail from the cursor on to the sink, in UID order,
// advancing the cursor after each; it returns how many it handed on.
func (a *Adapter) catchUp(ctx context.Context, c *imapclient.Client, cur *cursor, sink channels.Sink) (int, error) {
	found, err := c.UIDSearch(&imap.SearchCriteria{UID: []imap.UIDSet{{{Start: cur.Next, Stop: 0}}}}, nil).Wait()
	if err != nil {
		return 0, fmt.Errorf("search new mail: %w", err)
	}
	var uids []imap.UID
	for _, u := range found.AllUIDs() {
		if u >= cur.Next { // "n:*" matches the last mail even below n
			uids = append(uids, u)
		}
	}
	slices.Sort(uids)
	handed := 0
	for len(uids) > 0 {
		batch := uids[:min(fetchBatch, len(uids))]
		uids = uids[len(batch):]
		metas, err := c.Fetch(imap.UIDSetNum(batch...), &imap.FetchOptions{
			UID: true, RFC822Size: true, InternalDate: true,
			BodyStructure: &imap.FetchItemBodyStructure{Extended: true},
		}).Collect()
		if err != nil {
			return handed, fmt.Errorf("fetch new mail: %w", err)
		}
		slices.SortFunc(metas, func(x, y *imapclient.FetchMessageBuffer) int { return cmp.Compare(x.UID, y.UID) })
		for _, m := range metas {
			if m.UID < cur.Next {
				continue
			}
			msg, ok, err := a.inbound(ctx, c, cur.Validity, m)
			if err != nil {
				return handed, err
			}
			if ok {
				if err := sink.Handle(ctx, msg); err != nil {
					return handed, fmt.Errorf("hand mail uid %d to the handler: %w", m.UID, err)
				}
				handed++
			}
			cur.Next = m.UID + 1
			if m.InternalDate.After(cur.At) {
				cur.At = m.InternalDate
			}
			if err := a.saveCursor(ctx, *cur); err != nil {
				return handed, err
			}
		}
	}
	return handed, nil
}

// resync finds where to read a mailbox whose UIDVALIDITY changed: the
// first mail filed at or after at (the hub's dedup drops one read before),
// else uidNext.
func (a *Adapter) resync(c *imapclient.Client, at time.Time, uidNext imap.UID) (imap.UID, error) {
	if at.IsZero() {
		return uidNext, nil
	}
	at = at.Truncate(time.Second) // INTERNALDATE has whole seconds
	// SINCE compares dates in the server's time zone: a day earlier is safe.
	found, err := c.UIDSearch(&imap.SearchCriteria{Since: at.Add(-24 * time.Hour)}, nil).Wait()
	if err != nil {
		return 0, fmt.Errorf("search the recreated mailbox: %w", err)
	}
	uids := found.AllUIDs()
	if len(uids) == 0 {
		return uidNext, nil
	}
	msgs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, InternalDate: true}).Collect()
	if err != nil {
		return 0, fmt.Errorf("fetch dates in the recreated mailbox: %w", err)
	}
	next := uidNext
	for _, m := range msgs {
		if !m.InternalDate.Before(at) && m.UID < next {
			next = m.UID
		}
	}
	return next, nil
}

// oneLine keeps a server's message to one short line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
