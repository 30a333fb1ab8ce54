package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrUnknownServer is Restart's error for a name mcp.servers does not run.
var ErrUnknownServer = errors.New("no such MCP server")

// errRestartAsked ends a session the operator restarts.
var errRestartAsked = errors.New("restarted by the operator")

// Restart ends server name's connection (a stdio server's process is
// killed with it) and connects again at once: the web console's restart
// button. A server waiting out its backoff after a failure tries again now.
// It does not wait for the new connection (Status shows it).
func (m *Manager) Restart(name string) error {
	m.mu.Lock()
	s := m.servers[name]
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	select {
	case s.again <- struct{}{}:
	default: // one is pending already
	}
	return nil
}

// pause waits d before the next attempt, or less when the operator asks for
// a restart; its error is ctx's.
func (s *server) pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-s.again:
	}
	return nil
}

// ToolInfo is one of a server's tools as the server describes it.
type ToolInfo struct {
	Name        string // <server>__<tool>
	Description string // the server's text (shown as text, never as markup)
}

// Tools lists server name's tools with their descriptions (nil when there
// is no such server or it has listed none yet).
func (m *Manager) Tools(name string) []ToolInfo {
	m.mu.Lock()
	s := m.servers[name]
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ToolInfo, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, ToolInfo{Name: t.name, Description: t.desc})
	}
	return out
}
