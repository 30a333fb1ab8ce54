package main

// One helper decides where every CLI command that touches the data runs:
// locate. While the daemon runs it holds the database, and the command goes
// through its loopback admin API (server.listen; server.admin_token when
// set); otherwise the command opens the store directly. The command says what
// it needs (see need): read-only commands never create a data directory, and
// status only asks the daemon.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/memory"
)

// daemonClient talks to the running daemon's admin API.
type daemonClient struct {
	base       string // http://host:port
	configured string // server.admin_token ("" = none: the local token)
	localDir   string // the data directory holding admin.token
	// tokenErr is why the CLI has no admin token to send (admin.token is
	// not a regular file), told when the daemon refuses the request.
	tokenErr error
	// withheld says why server.admin_token is not sent ("" = it is).
	withheld string
	http     *http.Client
	// mayBeDown: the daemon was not seen holding the store (status), so a
	// refused connection means it is not running (see daemonDown).
	mayBeDown bool
}

// need says what a command requires of the data, for locate.
type need int

const (
	// needData: the command reads (or changes) existing data; without a
	// database it fails with "no data yet" and creates nothing (sessions,
	// audit, pairing, jobs list).
	needData need = iota
	// mayCreate: the command may start the data directory itself (ask,
	// chat, jobs run/pause/resume/delete).
	mayCreate
	// dataOptional: the command also works before the first start, without
	// creating the data directory (prompt: see promptCore).
	dataOptional
	// daemonOnly: only the running daemon can answer (status); the command
	// always goes through the admin API and a silent port says the daemon
	// is not running.
	daemonOnly
)

// locate loads the config and decides where the command runs: remote is the
// running daemon's admin API, or nil when no daemon holds the store (the
// command then opens it itself). It is the only place that probes the
// database lock; every command that touches the data asks it.
func (a *app) locate(n need) (*config.Config, *daemonClient, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		// Commands the running daemon answers from its own state still
		// work while the file does not load (see runningDespite).
		if n == needData || n == daemonOnly {
			if lc, c := a.runningDespite(err); c != nil {
				return lc, c, nil
			}
		}
		return nil, nil, err
	}
	if n == daemonOnly {
		c, err := newDaemonClient(cfg, a.stderr)
		if err != nil {
			return cfg, nil, err
		}
		c.mayBeDown = true
		return cfg, c, nil
	}
	if err := requireData(cfg); err != nil {
		// No database: no daemon holds it, and probing must not create it.
		if n == needData {
			return cfg, nil, err
		}
		return cfg, nil, nil
	}
	st, err := daemon.OpenStore(cfg, nil)
	switch {
	case errors.Is(err, memory.ErrInUse):
		c, cerr := newDaemonClient(cfg, a.stderr)
		if cerr != nil {
			return cfg, nil, fmt.Errorf("%w\nthe daemon is running and holds %s, and %v", err, storeName(cfg), cerr)
		}
		return cfg, c, nil
	case err != nil:
		return cfg, nil, err
	}
	if err := st.Close(); err != nil {
		return cfg, nil, err
	}
	return cfg, nil, nil
}

// newDaemonClient is the client of the daemon that serves cfg's data, at
// the address daemonAddr finds (a note on warn when it is not
// server.listen's). Its connections prove they reach the daemon before a
// token goes over them (daemonproof.go) whenever the CLI can read the local
// admin token; otherwise server.admin_token goes to an address on another
// host unchecked and to one on this machine not at all (see withheld).
func newDaemonClient(cfg *config.Config, warn io.Writer) (*daemonClient, error) {
	if cfg.Server.Listen == "" {
		return nil, errors.New("server.listen is empty: it has no admin API to ask (set server.listen, restart the daemon)")
	}
	dir := cfg.ResolvePath(cfg.Bot.DataDir)
	local, localErr := daemon.ReadLocalToken(dir)
	host, note := daemonAddr(cfg, local)
	if note != "" {
		fmt.Fprintln(warn, note)
	}
	c := &daemonClient{base: "http://" + host, configured: cfg.Server.AdminToken.Value(), localDir: dir, http: &http.Client{}}
	if c.configured == "" {
		c.tokenErr = localErr
	}
	if local != "" {
		c.http.Transport = verifiedTransport(func() string {
			t, _ := daemon.ReadLocalToken(dir)
			return t
		})
		return c, nil
	}
	if h, _, err := net.SplitHostPort(host); c.configured != "" && (err != nil || isLoopbackHost(h)) {
		why := "it holds no token"
		if localErr != nil {
			why = localErr.Error()
		} else if _, err := os.Stat(filepath.Join(dir, daemon.AdminTokenFile)); errors.Is(err, fs.ErrNotExist) {
			why = "it does not exist: has the daemon run with this data directory?"
		} else if err != nil {
			why = err.Error()
		}
		c.withheld = fmt.Sprintf("the CLI sends server.admin_token to %s only once the daemon there has proven itself with %s, which it cannot read (%s): "+
			"run the command as the daemon's user, inside its container, or with --data-dir naming its data directory", host, filepath.Join(dir, daemon.AdminTokenFile), why)
	}
	return c, nil
}

// token is the admin token for the next request: server.admin_token, else
// the local one as admin.token holds it now; "" when withheld.
func (c *daemonClient) token() string {
	switch {
	case c.withheld != "":
		return ""
	case c.configured != "":
		return c.configured
	}
	t, _ := daemon.ReadLocalToken(c.localDir)
	return t
}

// probeTimeout bounds the look for a running daemon behind an invalid file.
const probeTimeout = 5 * time.Second

// runningDespite finds the running daemon while the config file does not
// load (loadErr says why): a lenient parse of the file gives what reaches
// it (server.listen, server.admin_token, bot.data_dir for admin.token), and
// /healthz must answer there. The daemon keeps running the config it
// loaded, so its answers are true; the command says so on one warning line.
// No daemon there: nil, and the command reports loadErr.
func (a *app) runningDespite(loadErr error) (*config.Config, *daemonClient) {
	path, _, err := a.findConfig()
	if err != nil || path == "" {
		return nil, nil
	}
	data, err := config.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	cfg := config.ParseLenient(path, data, os.LookupEnv)
	if a.applyDataDir(cfg) != nil {
		return nil, nil
	}
	c, err := newDaemonClient(cfg, a.stderr)
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if !c.alive(ctx) {
		return nil, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	fmt.Fprintf(a.stderr, "switchboard: warning: %s does not load; showing the running daemon, which keeps the config it loaded: %s\n", abs, firstProblem(loadErr))
	return cfg, c
}

// firstProblem is the first line of a config error, with a count of the
// others.
func firstProblem(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%s (and %d more: switchboard config validate)", lines[0], len(lines)-1)
}

// alive reports whether a daemon answers /healthz at c.
func (c *daemonClient) alive(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1024))
	return resp.StatusCode == http.StatusOK
}

// maxAnswerBytes bounds what the CLI reads from one admin API answer.
const maxAnswerBytes = 64 << 20

// do sends one request; a non-200 answer is an error carrying the daemon's
// explanation (see daemonRefused).
func (c *daemonClient) do(ctx context.Context, method, path string, form url.Values) (*http.Response, error) {
	var body io.Reader
	target := c.base + path
	if method == http.MethodGet && len(form) > 0 {
		target += "?" + form.Encode()
	} else if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if tok := c.token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.http.Do(req)
	if e, ok := asNotTheDaemon(err); ok {
		return nil, e
	}
	if err != nil && c.mayBeDown {
		return nil, daemonDown(strings.TrimPrefix(c.base, "http://"), err)
	}
	if err != nil {
		return nil, fmt.Errorf("the daemon is running, but its admin API at %s did not answer: %w", c.base, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	err = daemonRefused(resp.StatusCode, msg) // a 4xx is the operator's mistake: exit 2
	switch {
	case resp.StatusCode == http.StatusUnauthorized && c.withheld != "":
		err = fmt.Errorf("%w\n%s", err, c.withheld)
	case resp.StatusCode == http.StatusUnauthorized && c.tokenErr != nil:
		err = fmt.Errorf("%w\nthe CLI had no admin token to send: %v", err, c.tokenErr)
	}
	return nil, &statusError{status: resp.StatusCode, err: err}
}

// call sends one request and decodes the JSON answer into out.
func (c *daemonClient) call(ctx context.Context, method, path string, form url.Values, out any) error {
	resp, err := c.do(ctx, method, path, form)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(out); err != nil {
		return fmt.Errorf("decode the daemon's answer: %w", err)
	}
	return nil
}

// copyTo streams the answer's body to w (sessions export).
func (c *daemonClient) copyTo(ctx context.Context, path string, form url.Values, w io.Writer) error {
	resp, err := c.do(ctx, http.MethodGet, path, form)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, io.LimitReader(resp.Body, maxAnswerBytes))
	return err
}

// localErr maps the shared daemon functions' errors to exit codes.
func localErr(err error) error {
	if errors.Is(err, daemon.ErrBadRequest) {
		return usageErr(err)
	}
	return err
}

// sinceTime parses --since (e.g. 24h, 7d) into a time; zero when empty.
func sinceTime(since string) (time.Time, error) {
	if since == "" {
		return time.Time{}, nil
	}
	d, err := config.ParseDuration(since)
	if err != nil {
		return time.Time{}, usageErr(fmt.Errorf("--since: %w", err))
	}
	return time.Now().Add(-d), nil
}
