package mcp

import (
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/agent"
)

func pidOf(t *testing.T, m *Manager, name string) int {
	t.Helper()
	for _, st := range m.Status() {
		if st.Name == name {
			return st.PID
		}
	}
	t.Fatalf("no server %q", name)
	return 0
}

// A stdio server killed between calls: its tools answer "unavailable" at
// once (never a hung call), the supervisor restarts it, the next call
// works, and Close leaves no child process behind.
func TestStdioServerKilledIsRestarted(t *testing.T) {
	reg := agent.NewRegistry()
	m := newManager(t, reg)
	m.Apply(map[string]ServerConfig{"local": stdioConfig(t)})
	waitReady(t, m)
	if got, err := call(t, reg, "local__echo", `{"text":"one"}`); err != nil || got != "echo: one" {
		t.Fatalf("first call = %q, %v", got, err)
	}
	pid := pidOf(t, m, "local")
	if pid == 0 || !alive(pid) {
		t.Fatalf("pid %d not alive", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Either the supervisor already noticed (state restarting) or the
	// call finds the connection gone: both answer "unavailable".
	_, err := call(t, reg, "local__echo", `{"text":"two"}`)
	if err == nil || !strings.Contains(err.Error(), `MCP server "local" is unavailable`) || !isPermanent(err) {
		t.Fatalf("call on a killed server: %v", err)
	}
	waitUntil(t, "a new server process", func() bool {
		p := pidOf(t, m, "local")
		return p != 0 && p != pid
	})
	waitReady(t, m)
	if got, err := call(t, reg, "local__echo", `{"text":"three"}`); err != nil || got != "echo: three" {
		t.Fatalf("call after restart = %q, %v", got, err)
	}
	if st := m.Status()[0]; st.Restarts < 1 {
		t.Fatalf("status %+v", st)
	}
	pid2 := pidOf(t, m, "local")
	m.Close()
	if alive(pid) || alive(pid2) {
		t.Fatalf("child processes survive Close: %d %v, %d %v", pid, alive(pid), pid2, alive(pid2))
	}
	if len(reg.Names()) != 0 {
		t.Fatalf("tools left after Close: %v", reg.Names())
	}
}

// Apply (hot reload) restarts only the servers whose config changed.
func TestApplyRestartsOnlyChanged(t *testing.T) {
	reg := agent.NewRegistry()
	m := newManager(t, reg)
	a, b := stdioConfig(t), stdioConfig(t)
	m.Apply(map[string]ServerConfig{"a": a, "b": b})
	waitReady(t, m)
	pa, pb := pidOf(t, m, "a"), pidOf(t, m, "b")

	b2 := stdioConfig(t)
	b2.Env["EXTRA"] = "1"
	c := stdioConfig(t)
	m.Apply(map[string]ServerConfig{"a": a, "b": b2, "c": c})
	waitReady(t, m)
	if got := pidOf(t, m, "a"); got != pa {
		t.Fatalf("unchanged server a was restarted: %d → %d", pa, got)
	}
	if got := pidOf(t, m, "b"); got == pb || alive(pb) {
		t.Fatalf("changed server b not restarted (old pid %d alive %v, now %d)", pb, alive(pb), got)
	}
	if _, ok := reg.Get("c__echo"); !ok {
		t.Fatalf("new server c has no tools: %v", reg.Names())
	}
	m.Apply(map[string]ServerConfig{"a": a})
	if _, ok := reg.Get("b__echo"); ok {
		t.Fatal("removed server b still has tools")
	}
	if got := len(m.Status()); got != 1 {
		t.Fatalf("%d servers after removing two", got)
	}
}
