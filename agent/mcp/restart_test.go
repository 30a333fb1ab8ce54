package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
)

// Restart (the console's button): a running stdio server gets a new process
// at once, the old one is gone, its tools work again and their descriptions
// are listed; an unknown name is a clear error.
func TestRestartRunningServer(t *testing.T) {
	reg := agent.NewRegistry()
	m := newManager(t, reg)
	m.Apply(map[string]ServerConfig{"local": stdioConfig(t)})
	waitReady(t, m)
	pid := pidOf(t, m, "local")
	if err := m.Restart("local"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a new server process", func() bool {
		p := pidOf(t, m, "local")
		return p != 0 && p != pid
	})
	waitReady(t, m)
	waitUntil(t, "the old process gone", func() bool { return !alive(pid) })
	if got, err := call(t, reg, "local__echo", `{"text":"again"}`); err != nil || got != "echo: again" {
		t.Fatalf("call after restart = %q, %v", got, err)
	}
	if st := m.Status()[0]; st.Restarts != 1 || st.State != StateReady {
		t.Errorf("status after one restart: %+v", st)
	}
	var desc string
	for _, ti := range m.Tools("local") {
		if ti.Name == "local__echo" {
			desc = ti.Description
		}
	}
	if desc != "Echo the text back." {
		t.Errorf("Tools(local) = %+v", m.Tools("local"))
	}
	if err := m.Restart("nope"); !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Restart(nope) = %v", err)
	}
}

// A server that failed and waits out a long backoff tries again at once
// when restarted: here its command appeared meanwhile, so it comes up.
func TestRestartFailedServerSkipsBackoff(t *testing.T) {
	reg := agent.NewRegistry()
	m := New(Options{Registry: reg, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	t.Cleanup(m.Close)
	cfg := stdioConfig(t)
	exe := cfg.Command
	link := filepath.Join(t.TempDir(), "server")
	cfg.Command = link // not there yet
	m.Apply(map[string]ServerConfig{"late": cfg})
	waitUntil(t, "the first attempt to fail", func() bool {
		st := m.Status()[0]
		return st.State == StateRestarting && st.Error != ""
	})
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart("late"); err != nil {
		t.Fatal(err)
	}
	waitReady(t, m) // an hour's backoff would time this out
	if _, ok := reg.Get("late__echo"); !ok {
		t.Errorf("tools after the restart: %v", reg.Names())
	}
}
