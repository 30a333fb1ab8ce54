package tools

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// guardConfig configures newGuardedClient.
type guardConfig struct {
	// tool names the tool in refusals ("web_fetch", "web_search").
	tool string
	// allow is the normalized domain allowlist (empty = any host).
	allow []string
	// allowPrivate turns the address guard off; allowNets lets these
	// (masked) prefixes through it.
	allowPrivate bool
	allowNets    []netip.Prefix
	// resolver resolves host names (nil: a new net.Resolver).
	resolver Resolver
	// timeout bounds a whole request and each of its phases.
	timeout time.Duration
	// maxRedirects is how many redirects are followed.
	maxRedirects int
	// origin, when set, pins the client to one origin (scheme, host and
	// port of this URL): it is the operator's configured endpoint, so it is
	// reached as configured — a SearXNG on 127.0.0.1 or on a compose
	// network works — but no request, redirect or connection goes to any
	// other origin. allow, allowPrivate, allowNets and resolver are then
	// unused.
	origin *url.URL
	// originHeaders are added to requests for origin only (secrets such as
	// an API key: never sent to another host, whatever a redirect says).
	originHeaders http.Header
}

// guardedClient is the one HTTP client of the tools that reach the network
// (web_fetch, web_search). Every request it sends, the first and each
// redirect, is checked before it is sent (check), and every connection is
// checked again when the socket connects (dial, control), so DNS rebinding
// cannot slip past the first check. Proxies from the environment are never
// used: the connect-time check must see the target, not a proxy.
//
// Without an origin the guard is web_fetch's: http and https only, no URL
// credentials, the domain allowlist, no disguised numeric hosts, and no
// address that AddressRefusal refuses (unless allowPrivate or allowNets).
// With an origin (web_search) the client reaches that origin only.
type guardedClient struct {
	cfg        guardConfig
	originHost string // normalized host of cfg.origin
	originPort string // port of cfg.origin, the scheme's default if none
	originText string // scheme://host[:port] of cfg.origin, for messages
	dialer     *net.Dialer
	http       *http.Client
}

// newGuardedClient returns the guarded client for cfg.
func newGuardedClient(cfg guardConfig) *guardedClient {
	if cfg.resolver == nil {
		cfg.resolver = &net.Resolver{}
	}
	c := &guardedClient{cfg: cfg}
	c.dialer = &net.Dialer{Timeout: cfg.timeout, Control: c.control}
	if o := cfg.origin; o != nil {
		c.originHost, _ = normalizeHost(o.Hostname())
		c.originPort = urlPort(o)
		c.originText = strings.ToLower(o.Scheme) + "://" + o.Host
		c.dialer.Control = nil // the origin is dialed as configured; dial refuses the rest
	}
	var rt http.RoundTripper = &http.Transport{
		Proxy:                  nil, // never: the connect-time check must see the target
		DialContext:            c.dial,
		TLSHandshakeTimeout:    cfg.timeout,
		ResponseHeaderTimeout:  cfg.timeout,
		MaxResponseHeaderBytes: 64 << 10,
		DisableKeepAlives:      true, // no idle connection outlives a call
	}
	if len(cfg.originHeaders) > 0 {
		rt = &originHeaderTransport{base: rt, c: c}
	}
	c.http = &http.Client{Transport: rt, CheckRedirect: c.checkRedirect, Timeout: cfg.timeout}
	return c
}

// Do checks req's URL and sends it, following allowed redirects. A refused
// URL is a *checkError (wrapping a *lookupError when the host did not
// resolve), a refused redirect a *redirectError and a refused connection a
// *BlockedAddressError, each inside the client's *url.Error.
func (c *guardedClient) Do(req *http.Request) (*http.Response, error) {
	if err := c.check(req.Context(), req.URL); err != nil {
		return nil, &checkError{err: err}
	}
	return c.http.Do(req)
}

// checkError is a request refused before it was sent.
type checkError struct{ err error }

func (e *checkError) Error() string { return e.err.Error() }
func (e *checkError) Unwrap() error { return e.err }

// urlPort is u's port, or its scheme's default.
func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// sameOrigin reports whether u is on the pinned origin.
func (c *guardedClient) sameOrigin(u *url.URL) bool {
	if !strings.EqualFold(u.Scheme, c.cfg.origin.Scheme) {
		return false
	}
	h, err := normalizeHost(u.Hostname())
	return err == nil && h == c.originHost && urlPort(u) == c.originPort
}

func (c *guardedClient) offOrigin() error {
	return fmt.Errorf("%s connects only to its configured endpoint %s", c.cfg.tool, c.originText)
}

// check refuses a URL before any connection: off the pinned origin; or
// scheme, credentials, domain allowlist, disguised numeric hosts and
// addresses the host resolves to.
func (c *guardedClient) check(ctx context.Context, u *url.URL) error {
	if c.cfg.origin != nil {
		if !c.sameOrigin(u) {
			return c.offOrigin()
		}
		return nil
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return fmt.Errorf("only http and https URLs can be fetched, not %s: URLs", scheme)
	}
	if u.User != nil {
		return errors.New("URLs with a user name or password are not allowed")
	}
	rawHost := u.Hostname()
	host, err := normalizeHost(rawHost)
	if err != nil {
		return err
	}
	allow := c.cfg.allow
	addr, canonical, isIP := parseHostIP(host)
	if isIP {
		addr = addr.Unmap()
		if len(allow) > 0 && !ipAllowed(addr, allow) {
			return fmt.Errorf("%s is not in the allowed domains (%s)", rawHost, strings.Join(allow, ", "))
		}
		if err := c.checkAddr(rawHost, addr); err != nil {
			return err
		}
		if !canonical {
			return fmt.Errorf("refusing %s: numeric hosts must be written as dotted-decimal IPv4 (%s) or IPv6", rawHost, addr)
		}
		return nil
	}
	if !domainAllowed(host, allow) {
		return fmt.Errorf("%s is not in the allowed domains (%s)", host, strings.Join(allow, ", "))
	}
	addrs, err := c.lookup(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := c.checkAddr(host, a); err != nil {
			return err
		}
	}
	return nil
}

func ipAllowed(a netip.Addr, allow []string) bool {
	for _, d := range allow {
		if b, err := netip.ParseAddr(d); err == nil && b == a {
			return true
		}
	}
	return false
}

func (c *guardedClient) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	addrs, err := c.cfg.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &lookupError{fmt.Errorf("cannot resolve %s: %w", host, err)}
	}
	if len(addrs) == 0 {
		return nil, &lookupError{fmt.Errorf("cannot resolve %s: no addresses", host)}
	}
	return addrs, nil
}

// lookupError is a failed name resolution: unlike a refusal, it may pass on
// another try.
type lookupError struct{ err error }

func (e *lookupError) Error() string { return e.err.Error() }
func (e *lookupError) Unwrap() error { return e.err }

func isLookupError(err error) bool {
	var le *lookupError
	return errors.As(err, &le)
}

// checkAddr applies the address guard (allowPrivate, allowNets, then
// AddressRefusal).
func (c *guardedClient) checkAddr(host string, a netip.Addr) error {
	if c.cfg.allowPrivate {
		return nil
	}
	a = a.WithZone("").Unmap()
	for _, p := range c.cfg.allowNets {
		if p.Contains(a) {
			return nil
		}
	}
	if r := AddressRefusal(a); r != "" {
		return &BlockedAddressError{Host: host, Addr: a, Reason: r}
	}
	return nil
}

// control is the net.Dialer Control function: it sees the address the socket
// is about to connect to, after every resolution, and refuses it if guarded.
func (c *guardedClient) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing %s: not an IP address and port", address)
	}
	return c.checkAddr("", ap.Addr())
}

// dial is the transport's DialContext. Pinned to an origin, it connects to
// the origin's host and port only, as configured, and refuses any other
// address. Otherwise it resolves with the configured resolver and dials each
// address in turn; the dialer's Control function checks each one.
func (c *guardedClient) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if c.cfg.origin != nil {
		if h, err := normalizeHost(host); err != nil || h != c.originHost || port != c.originPort {
			return nil, fmt.Errorf("refusing to connect to %s: %w", address, c.offOrigin())
		}
		return c.dialer.DialContext(ctx, network, address)
	}
	if host, err = normalizeHost(host); err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, _, ok := parseHostIP(host); ok {
		addrs = []netip.Addr{a}
	} else if addrs, err = c.lookup(ctx, host); err != nil {
		return nil, err
	}
	var lastErr error
	for _, a := range addrs {
		conn, err := c.dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		var be *BlockedAddressError
		if errors.As(err, &be) {
			return nil, &BlockedAddressError{Host: host, Addr: be.Addr, Reason: be.Reason}
		}
		lastErr = err
	}
	return nil, lastErr
}

// redirectError is a refused redirect.
type redirectError struct {
	to  *url.URL
	err error
}

func (e *redirectError) Error() string {
	return "redirect to " + e.to.Redacted() + " refused: " + e.err.Error()
}
func (e *redirectError) Unwrap() error { return e.err }

func (c *guardedClient) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > c.cfg.maxRedirects {
		return &redirectError{to: req.URL, err: fmt.Errorf("more than %d redirects", c.cfg.maxRedirects)}
	}
	if req.Method != http.MethodGet {
		return &redirectError{to: req.URL, err: fmt.Errorf("method %s", req.Method)}
	}
	if err := c.check(req.Context(), req.URL); err != nil {
		return &redirectError{to: req.URL, err: err}
	}
	return nil
}

// originHeaderTransport adds the client's origin headers to requests for
// its origin, and to no other request.
type originHeaderTransport struct {
	base http.RoundTripper
	c    *guardedClient
}

func (t *originHeaderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.c.sameOrigin(req.URL) {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.c.cfg.originHeaders {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}
