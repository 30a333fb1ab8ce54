package mcp

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/internal/redact"
)

// inheritedEnv are the only variables a stdio server gets from the daemon's
// environment (the daemon's own secrets are not passed on); the server's
// env config adds to them.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

// proc is a stdio server's child process (nil for other transports).
type proc struct {
	cmd *exec.Cmd
}

func (p *proc) pid() int {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// kill ends the child's whole process group (npx and shell wrappers start
// grandchildren); the SDK's Close has already reaped the child itself.
func (p *proc) kill() {
	if pid := p.pid(); pid > 0 {
		killGroup(pid)
	}
}

// transport builds the transport of one connection attempt.
func (s *server) transport() (sdk.Transport, *proc, error) {
	c := s.cfg
	switch {
	case c.Transport != nil:
		return c.Transport(), nil, nil
	case c.URL != "":
		return &sdk.StreamableClientTransport{
			Endpoint:   c.URL,
			HTTPClient: &http.Client{Transport: &headerRT{base: s.mgr.httpTransport(), headers: c.Headers}},
			MaxRetries: -1, // the supervisor reconnects
		}, nil, nil
	case c.Command != "":
		cmd := exec.Command(c.Command, c.Args...)
		cmd.Dir = c.Cwd
		cmd.Env = childEnv(c.Env)
		cmd.Stderr = &lineLogger{log: s.log, secrets: secretsOf(c)}
		setProcAttrs(cmd)
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, &proc{cmd: cmd}, nil
	}
	return nil, nil, errors.New("neither command nor url is set")
}

func childEnv(extra map[string]string) []string {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			if _, override := extra[k]; !override {
				env = append(env, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// headerRT adds the configured headers (secrets: never logged) to every
// request.
type headerRT struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h *headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// lineLogger logs a child's stderr line by line at debug level, each line
// bounded, so a chatty or hostile server cannot flood the log or memory.
type lineLogger struct {
	log     *slog.Logger
	secrets []string // the server's env values: replaced if it prints them
	mu      sync.Mutex
	buf     []byte
}

// secretsOf lists the configured env and header values worth scrubbing.
func secretsOf(c ServerConfig) []string {
	var out []string
	for _, m := range []map[string]string{c.Env, c.Headers} {
		for _, v := range m {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	return out
}

const maxStderrLine = 2000

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxStderrLine {
				l.emit(l.buf[:maxStderrLine])
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) emit(line []byte) {
	if len(line) > maxStderrLine {
		line = line[:maxStderrLine]
	}
	s := string(bytes.TrimSpace(line))
	for _, sec := range l.secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	if s = redact.Text(s); s != "" {
		l.log.Debug("MCP server stderr", "line", s)
	}
}
