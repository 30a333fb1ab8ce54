package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

// Issue 31 part 4, on the built binary: the model spawns a background task
// from a chat; the chat's answer comes at once, the task's result later as a
// reply naming the task. The daemon is SIGKILLed while the task runs: after
// the restart the task is resumed and its result delivered exactly once;
// `switchboard status --json` shows the task counts.
func TestBinaryBackgroundTaskSurvivesKill(t *testing.T) {
	const (
		alice = "@alice:fake.test"
		dm    = "!dm:fake.test"
	)
	fake := fakematrix.New(t, fakematrix.Options{})
	fake.AddRoom(fakematrix.Room{ID: dm, Members: []string{alice}, Joined: true, Direct: true})
	var taskCalls atomic.Int32
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		switch text := r.LastUserText(); {
		case text == "TASK: find the tides in Kiel":
			if taskCalls.Add(1) == 1 {
				return fakellm.Response{Content: "working", StallAfter: 1} // killed in the middle of this
			}
			return fakellm.Response{Content: "High tide at 14:02."}
		case strings.Contains(text, "tides please") && len(r.ToolResults()) == 0:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "spawn",
				Arguments: `{"title":"tides","prompt":"TASK: find the tides in Kiel"}`}}}
		case strings.Contains(text, "tides please"):
			return fakellm.Response{Content: "I started a background task for that."}
		default:
			return fakellm.Response{Content: "echo: " + text}
		}
	})
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
agent:
  tools: [current_time, spawn]
access:
  mode: allowlist
  allow_from: ["matrix:user:%s"]
personas:
  dir: ./personas
channels:
  console:
    enabled: false
  matrix:
    enabled: true
    homeserver: %s
    user_id: "%s"
tasks:
  max_per_chat: 2
server:
  listen: %s
`, llm.URL, alice, fake.URL(), fake.UserID(), addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "MATRIX_ACCESS_TOKEN="+fake.Token())
	wait := func(what string, cond func() bool) {
		t.Helper()
		fake.WaitFor(t, waitHang, what, cond)
	}
	synced := func() bool {
		for _, r := range fake.Requests("/sync") {
			if r.Query["since"] != "" {
				return true
			}
		}
		return false
	}

	d := startDaemonBin(t, env, cfg, addr)
	wait("the daemon's incremental sync", synced)
	fake.UserSays(dm, alice, "tides please")
	wait("the chat's answer", func() bool {
		return matrixCount(matrixBodies(fake, dm), "I started a background task for that.") > 0
	})
	wait("the task to ask the model", func() bool { return taskCalls.Load() >= 1 })
	d.kill()

	d2 := startDaemonBin(t, env, cfg, addr)
	defer func() {
		if t.Failed() {
			t.Logf("first daemon's log:\n%s\nsecond daemon's log:\n%s", d.stderr.String(), d2.stderr.String())
		}
	}()
	const result = "Task t1 (tides) finished:"
	wait("the resumed task's result", func() bool { return matrixCount(matrixBodies(fake, dm), result) > 0 })
	// Something after it, so a second delivery would have had its chance.
	fake.UserSays(dm, alice, "ping")
	wait("the next answer", func() bool { return matrixCount(matrixBodies(fake, dm), "echo: ping") > 0 })

	got := matrixBodies(fake, dm)
	if n := matrixCount(got, result); n != 1 {
		t.Errorf("the task's result is in the room %d times, want once:\n%q", n, got)
	}
	if n := matrixCount(got, "High tide at 14:02."); n != 1 {
		t.Errorf("the task's answer is in the room %d times, want once:\n%q", n, got)
	}
	if n := taskCalls.Load(); n != 2 {
		t.Errorf("the task asked the model %d times, want 2 (killed once, resumed once)", n)
	}

	st := runBin(t, env, "--config", cfg, "status", "--json")
	var rep struct {
		Tasks *struct{ Queued, Running int } `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &rep); err != nil || rep.Tasks == nil {
		t.Fatalf("status --json: %v\n%s\n%s", err, st.stdout, st.stderr)
	}
	if rep.Tasks.Queued != 0 || rep.Tasks.Running != 0 {
		t.Errorf("status tasks %+v, want none queued or running", *rep.Tasks)
	}
	if txt := runBin(t, env, "--config", cfg, "status"); !strings.Contains(txt.stdout, "background tasks: 0 running, 0 queued") {
		t.Errorf("status does not show the tasks:\n%s\n%s", txt.stdout, txt.stderr)
	}
	t.Logf("direct room: %q", got)
}
