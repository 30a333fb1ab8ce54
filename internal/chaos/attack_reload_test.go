package chaos

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// TestReloadToAllowlistMidTurn: a user's turn is running (slow model) and
// two more of their messages wait behind it when the operator switches
// access to an allowlist without them and reloads (SIGHUP). The waiting
// messages were admitted under the old policy, but the user is no longer
// allowed when their turn comes: they never reach the model.
func TestReloadToAllowlistMidTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: runs the daemon binary")
	}
	// The first answer comes once the reload was applied: the messages
	// behind it and the reload land while it runs, however slow the machine.
	echo := fakellm.Echo()
	reloaded := make(chan struct{})
	var reloadOnce sync.Once
	reloadDone := func() { reloadOnce.Do(func() { close(reloaded) }) }
	slowFirst := func(req *fakellm.Request) fakellm.Response {
		out := echo(req)
		if req.Seq == 1 {
			arrived(reloaded)
		}
		return out
	}
	r := newRig(t, loadtest.ModelOptions{Responder: slowFirst}, loadtest.ConfigOptions{LogLevel: "info"})
	t.Cleanup(reloadDone) // before the fakes close: no model call left waiting
	proc := r.start()
	tok := func(seq int) string { return loadtest.Token(0, seq) }
	first := r.p.Expect(tok(0))
	r.p.Say(0, "first "+tok(0))
	if !until(func() bool { return r.p.LLM.RequestCount() >= 1 }) {
		t.Fatal("the first message did not reach the model")
	}
	r.p.Say(0, "second "+tok(1))
	r.p.Say(0, "third "+tok(2))
	if !until(func() bool {
		return r.metric("switchboard_messages_in_total", `channel="telegram"`) >= 3
	}) {
		t.Fatal("the queued messages did not reach the daemon")
	}
	b, err := os.ReadFile(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "  mode: open\n  allow_from: []", "  mode: allowlist\n  allow_from: [\"telegram:user:1\"]", 1)
	if cfg == string(b) {
		t.Fatal("could not rewrite the access section")
	}
	if err := os.WriteFile(r.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = proc.Cmd.Process.Signal(syscall.SIGHUP)
	if !until(func() bool { return strings.Contains(proc.Output(), "applied: access") }) {
		t.Fatalf("no reload applied:\n%s", proc.Output())
	}
	if r.p.LLM.RequestCount() != 1 {
		t.Fatal("the first turn ended before the reload: the test proves nothing")
	}
	reloadDone()
	if !arrived(first) {
		t.Fatal("the turn running at the reload was not answered")
	}
	time.Sleep(time.Second) // the queued messages would run now
	saw := modelSaw(r.p)
	for _, s := range []int{1, 2} {
		if strings.Contains(saw, tok(s)) {
			t.Errorf("message %s, queued before the user was removed, reached the model after the reload", tok(s))
		}
	}
	if got := botMessages(r.p, 0); len(got) != 1 {
		t.Errorf("bot said %q, want only the answer of the turn running at the reload", got)
	}
	if n := r.p.LLM.RequestCount(); n != 1 {
		t.Errorf("the model was called %d times, want once", n)
	}
}
