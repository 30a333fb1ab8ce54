package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"reflect"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/internal/redact"
)

// ServerConfig is one MCP server. Exactly one of Command (stdio) and URL
// (Streamable HTTP) is set, or Connect (tests, in-process servers).
type ServerConfig struct {
	Command string
	Args    []string
	Env     map[string]string // added to a minimal environment
	Cwd     string
	URL     string
	Headers map[string]string
	// Timeout bounds connecting, listing tools and each call (0 = 30s).
	Timeout time.Duration
	// Tools is an allowlist of the server's tool names (globs); nil = all.
	Tools []string
	// Transport, when set, is used instead of Command/URL (in-process
	// servers). It is compared by identity on Apply.
	Transport func() sdk.Transport `json:"-"`
}

func (c ServerConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 30 * time.Second
}

func (c ServerConfig) equal(o ServerConfig) bool {
	fa, fb := c.Transport, o.Transport
	c.Transport, o.Transport = nil, nil
	same := reflect.DeepEqual(c, o)
	if fa != nil || fb != nil {
		same = same && fa != nil && fb != nil && reflect.ValueOf(fa).Pointer() == reflect.ValueOf(fb).Pointer()
	}
	return same
}

// State is a server's state.
type State string

// The states of a server.
const (
	StateStarting   State = "starting"
	StateReady      State = "ready"
	StateRestarting State = "restarting"
	StateStopped    State = "stopped"
)

// server supervises one MCP server: it connects, lists the tools, and
// reconnects with backoff whenever the connection ends.
type server struct {
	name string
	cfg  ServerConfig
	mgr  *Manager
	log  *slog.Logger

	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{} // list_changed: refresh the tool list
	again  chan struct{} // the operator asked for a restart (Manager.Restart)

	mu       sync.Mutex
	state    State
	lastErr  string
	restarts int
	sess     *sdk.ClientSession
	proc     *proc
	tools    []*Tool       // offered under their names (if agent.tools admits them)
	refused  []RefusedTool // listed by the server, not offered (see buildTools)
	pid      int
}

func newServer(m *Manager, name string, cfg ServerConfig) *server {
	return &server{name: name, cfg: cfg, mgr: m, log: m.log.With("mcp_server", name),
		done: make(chan struct{}), kick: make(chan struct{}, 1), again: make(chan struct{}, 1), state: StateStarting}
}

// currentSession returns the live session, or nil and why there is none.
func (s *server) currentSession() (*sdk.ClientSession, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil && s.state == StateReady {
		return s.sess, ""
	}
	why := string(s.state)
	if s.lastErr != "" {
		why += ": " + s.lastErr
	}
	return nil, why
}

// connectionLost is called by a tool whose call found the connection gone:
// the session is closed so the supervisor restarts the server.
func (s *server) connectionLost(sess *sdk.ClientSession, err error) {
	s.mu.Lock()
	if s.sess == sess && s.state == StateReady {
		s.state = StateRestarting
		s.lastErr = "connection lost"
	}
	s.mu.Unlock()
	s.log.Warn("MCP connection lost during a call", "err", err)
	go sess.Close()
}

func sessionGone(sess *sdk.ClientSession) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return sess.Ping(ctx, nil) != nil
}

// run is the supervision loop; it returns when ctx ends.
func (s *server) run(ctx context.Context) {
	defer close(s.done)
	defer s.mgr.publish(s, nil, nil)
	backoff := s.mgr.restartPolicy().Backoff()
	for {
		up, err := s.session(ctx)
		if ctx.Err() != nil {
			s.setState(StateStopped, "", 0)
			return
		}
		if up {
			backoff.Reset()
		}
		delay := backoff.Next()
		msg := "disconnected"
		if err != nil {
			msg = redact.Text(err.Error()) // a URL in an error may carry credentials
		}
		if errors.Is(err, errRestartAsked) {
			delay = 0
			s.log.Info("MCP server restarting at the operator's request")
		} else {
			s.log.Warn("MCP server down; restarting", "err", msg, "in", delay)
		}
		s.setState(StateRestarting, msg, 0)
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
		if s.pause(ctx, delay) != nil {
			s.setState(StateStopped, "", 0)
			return
		}
	}
}

func (s *server) setState(st State, lastErr string, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.lastErr = st, lastErr
	if st != StateReady {
		s.sess = nil
	}
	s.pid = pid
}

// session runs one connection until it ends: up reports whether it got as
// far as listing the tools.
func (s *server) session(ctx context.Context) (up bool, err error) {
	tr, p, err := s.transport()
	if err != nil {
		return false, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "switchboard", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case s.kick <- struct{}{}:
			default:
			}
		},
	})
	cctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
	sess, err := client.Connect(cctx, tr, nil)
	cancel()
	if err != nil {
		p.kill()
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		_ = sess.Close()
		p.kill()
	}()
	if err := s.refresh(ctx, sess); err != nil {
		return false, err
	}
	s.mu.Lock()
	s.sess, s.state, s.lastErr, s.proc, s.pid = sess, StateReady, "", p, p.pid()
	s.mu.Unlock()
	s.log.Info("MCP server ready", "pid", p.pid())
	waited := make(chan struct{})
	go func() { _ = sess.Wait(); close(waited) }()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case <-waited:
			return true, errors.New("the server closed the connection")
		case <-s.again:
			return true, errRestartAsked
		case <-s.kick:
			if err := s.refresh(ctx, sess); err != nil {
				s.log.Warn("MCP tool list refresh failed", "err", err)
			}
		}
	}
}

// refresh lists the server's tools and publishes the admitted ones.
func (s *server) refresh(ctx context.Context, sess *sdk.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
	defer cancel()
	var defs []*sdk.Tool
	for def, err := range sess.Tools(lctx, nil) {
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		if len(defs) >= maxToolsPerServer {
			s.log.Warn("MCP server lists too many tools; the rest are ignored", "max", maxToolsPerServer)
			break
		}
		if !s.wants(def.Name) {
			continue
		}
		defs = append(defs, def)
	}
	tools, refused := s.buildTools(defs)
	s.mgr.publish(s, tools, refused)
	return nil
}

// maxToolsPerServer bounds the tools one server may add.
const maxToolsPerServer = 256

func (s *server) wants(remote string) bool {
	if s.cfg.Tools == nil {
		return true
	}
	for _, pat := range s.cfg.Tools {
		if ok, err := path.Match(pat, remote); err == nil && ok {
			return true
		}
	}
	return false
}

// stop ends the supervision loop and waits for the server to be gone.
func (s *server) stop() {
	s.cancel()
	<-s.done
}
