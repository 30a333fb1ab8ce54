package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakematrix"
)

// bodies are the bot's messages in room as users read them.
func matrixBodies(fake *fakematrix.Server, room string) []string {
	var out []string
	for _, m := range fake.Sent(room) {
		out = append(out, m.Body)
	}
	return out
}

func matrixCount(list []string, s string) int {
	n := 0
	for _, x := range list {
		if strings.Contains(x, s) {
			n++
		}
	}
	return n
}

// Issue 33: the built binary answers on Matrix — a direct message once, a
// group mention once, a stranger and an unaddressed group message not at
// all — accepts matrix targets in deliver_to and personas.by_target, checks
// the token in doctor, and a kill in the middle of a turn loses and doubles
// nothing: the turn is replayed, the message sent while it was down is
// answered, each once.
func TestBinaryMatrix(t *testing.T) {
	const (
		alice = "@alice:fake.test"
		eve   = "@eve:fake.test"
		dm    = "!dm:fake.test"
		group = "!group:fake.test"
	)
	fake := fakematrix.New(t, fakematrix.Options{})
	fake.AddRoom(fakematrix.Room{ID: dm, Members: []string{alice}, Joined: true, Direct: true})
	fake.AddRoom(fakematrix.Room{ID: group, Members: []string{alice, eve}, Joined: true})
	var stalled atomic.Bool
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		text := r.LastUserText()
		if strings.Contains(text, "slow question") && stalled.CompareAndSwap(false, true) {
			return fakellm.Response{Content: "a long answer that never ends", StallAfter: 1}
		}
		return fakellm.Response{Content: "echo: " + text}
	})
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
access:
  mode: allowlist
  allow_from: ["matrix:user:%s"]
personas:
  dir: ./personas
  by_target: {"matrix:%s": assistant, "matrix:%s:$root": assistant}
channels:
  console:
    enabled: false
  matrix:
    enabled: true
    homeserver: %s
    user_id: "%s"
jobs:
  - name: matrix-note
    schedule: "0 9 * * *"
    kind: reminder
    text: Stand-up soon
    deliver_to: ["matrix:%s", "matrix:%s:$threadroot"]
server:
  listen: %s
`, llm.URL, alice, dm, group, fake.URL(), fake.UserID(), group, group, addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "MATRIX_ACCESS_TOKEN="+fake.Token())

	doc := runBin(t, env, "--config", cfg, "doctor")
	if !strings.Contains(doc.stdout+doc.stderr, "the token belongs to "+fake.UserID()) {
		t.Errorf("doctor does not check the Matrix token:\n%s\n%s", doc.stdout, doc.stderr)
	}
	noSecret(t, doc, fake.Token())

	d := startDaemonBin(t, env, cfg, addr)
	wait := func(what string, cond func() bool) {
		t.Helper()
		fake.WaitFor(t, waitHang, what, cond)
	}
	wait("the daemon's incremental sync", func() bool {
		for _, r := range fake.Requests("/sync") {
			if r.Query["since"] != "" {
				return true
			}
		}
		return false
	})

	fake.UserSays(dm, alice, "hello bot")
	wait("the answer in the direct room", func() bool { return matrixCount(matrixBodies(fake, dm), "echo: hello bot") > 0 })

	fake.UserSays(group, alice, "just chatting")
	fake.UserMentions(group, eve, "stranger asks")
	fake.UserMentions(group, alice, "group question")
	wait("the answer in the group", func() bool { return matrixCount(matrixBodies(fake, group), "echo: group question") > 0 })

	// A kill in the middle of a turn.
	fake.UserSays(dm, alice, "slow question")
	wait("the model to be asked the slow question", func() bool {
		for _, r := range llm.Requests() {
			if strings.Contains(r.LastUserText(), "slow question") {
				return true
			}
		}
		return false
	})
	d.kill()
	fake.UserSays(dm, alice, "while down")
	startDaemonBin(t, env, cfg, addr)
	wait("the replayed and the new answer", func() bool {
		b := matrixBodies(fake, dm)
		return matrixCount(b, "echo: slow question") > 0 && matrixCount(b, "echo: while down") > 0
	})
	fake.UserSays(dm, alice, "last one")
	wait("the last answer", func() bool { return matrixCount(matrixBodies(fake, dm), "echo: last one") > 0 })

	dmSent, groupSent := matrixBodies(fake, dm), matrixBodies(fake, group)
	for _, s := range []string{"echo: hello bot", "echo: slow question", "echo: while down", "echo: last one"} {
		if n := matrixCount(dmSent, s); n != 1 {
			t.Errorf("%q is in the direct room %d times, want once:\n%q", s, n, dmSent)
		}
	}
	if len(groupSent) != 1 || matrixCount(groupSent, "echo: group question") != 1 {
		t.Errorf("the group shows %q: want only the answer to the mention (no answer to the stranger or the unaddressed message)", groupSent)
	}
	for _, s := range fake.Sent(dm) {
		if s.MsgType != "m.notice" || s.Format != "org.matrix.custom.html" {
			t.Errorf("an answer is not an HTML m.notice: %+v", s)
		}
	}
	t.Logf("direct room: %q", dmSent)
}

// Issue 33, pairing on Matrix: a stranger's direct invite is joined (the
// hub admits it in pairing mode), the stranger gets a pairing code and no
// answer, a group invite from the stranger is declined; after
// `switchboard pairing approve` the same user is answered. A job's
// deliver_to reaches a matrix target.
func TestBinaryMatrixPairing(t *testing.T) {
	const bob = "@bob:fake.test"
	fake := fakematrix.New(t, fakematrix.Options{})
	fake.AddRoom(fakematrix.Room{ID: "!ops:fake.test", Members: []string{"@alice:fake.test"}, Joined: true})
	at := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339)
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: "echo: " + r.LastUserText()}
	})
	addr := freePort(t)
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
access:
  mode: pairing
personas:
  dir: ./personas
channels:
  console:
    enabled: false
  matrix:
    enabled: true
    homeserver: %s
jobs:
  - name: ops-note
    at: %s
    misfire: run_once
    kind: reminder
    text: Stand-up soon
    deliver_to: ["matrix:!ops:fake.test"]
server:
  listen: %s
`, llm.URL, fake.URL(), at, addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "MATRIX_ACCESS_TOKEN="+fake.Token())
	startDaemonBin(t, env, cfg, addr)
	wait := func(what string, cond func() bool) {
		t.Helper()
		fake.WaitFor(t, waitHang, what, cond)
	}
	fake.Invite("!bobdm:fake.test", bob, true)
	fake.Invite("!bobgroup:fake.test", bob, false)
	wait("the direct invite joined, the group invite declined", func() bool {
		return fake.Joined("!bobdm:fake.test") && fake.Left("!bobgroup:fake.test")
	})
	fake.UserSays("!bobdm:fake.test", bob, "hi, who are you?")
	var code string
	wait("a pairing code", func() bool {
		for _, b := range matrixBodies(fake, "!bobdm:fake.test") {
			if _, after, ok := strings.Cut(b, "switchboard pairing approve "); ok {
				code = strings.TrimRight(after, ")\n ")
				return true
			}
		}
		return false
	})
	r := runBin(t, env, "--config", cfg, "pairing", "approve", code)
	if r.code != 0 || !strings.Contains(r.stdout, "matrix:user:"+bob) {
		t.Fatalf("pairing approve %s: exit %d\n%s\n%s", code, r.code, r.stdout, r.stderr)
	}
	fake.UserSays("!bobdm:fake.test", bob, "now?")
	wait("the answer after pairing", func() bool { return matrixCount(matrixBodies(fake, "!bobdm:fake.test"), "echo: now?") == 1 })
	// deliver_to: a job's reminder reaches its matrix target, once.
	wait("the job's reminder", func() bool { return matrixCount(matrixBodies(fake, "!ops:fake.test"), "Stand-up soon") == 1 })
	if b := matrixBodies(fake, "!bobdm:fake.test"); matrixCount(b, "echo:") != 1 {
		t.Errorf("the stranger's room shows %q: only the message after pairing may be answered", b)
	}
}
