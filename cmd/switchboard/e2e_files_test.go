package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 31 part 1, on the built binary with the default agent.tools: the
// model writes a file and reads it back in the next step; /files lists it;
// after a restart it is still there.
func TestBinaryWorkspaceFiles(t *testing.T) {
	tg := faketelegram.New(t, faketelegram.Options{})
	addr := freePort(t)
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		switch n := len(r.ToolResults()); {
		case !r.HasTools():
			return fakellm.Response{Content: "ok"}
		case n == 0:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "write_file",
				Arguments: `{"path":"notes/plan.md","content":"step one\nstep two\n"}`}}}
		case n == 1:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "read_file", Arguments: `{"path":"notes/plan.md"}`}}}
		default:
			return fakellm.Response{Content: "DONE\n" + fakellm.MessageText(r.LastMessage())}
		}
	})
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
  max_retries: 0
access:
  mode: open
channels:
  console:
    enabled: false
  telegram:
    enabled: true
    token: ${SB_TG_TOKEN}
    api_url: %s
personas:
  dir: ./personas
server:
  listen: %s
workspace: {max_bytes: 1MiB, max_files: 10, max_file: 64KiB}
`, llm.URL, tg.URL(), addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_TG_TOKEN="+faketelegram.DefaultToken)
	const chat = 4242
	waitFor := func(d *daemonProc, what string) {
		t.Helper()
		awaitCond(t, what, func() bool {
			for _, m := range tg.Sent(chat) {
				if strings.Contains(m.Plain, what) {
					return true
				}
			}
			return false
		}, d.dump)
	}
	d := startDaemonBin(t, env, cfg, addr)
	tg.UserSays(chat, "save my plan")
	waitFor(d, "DONE")
	waitFor(d, "notes/plan.md: lines 1-2 of 2 (18 bytes)\nstep one\nstep two")
	tg.UserSays(chat, "/files")
	const listed = "Files in this chat:\nnotes/plan.md — 18 bytes\n1 of 10 files, 18 bytes of 1 MiB (one file at most 64 KiB)"
	waitFor(d, listed)
	d.stop(t)

	before := len(tg.Sent(chat))
	d = startDaemonBin(t, env, cfg, addr)
	tg.UserSays(chat, "/files")
	awaitCond(t, "/files after the restart", func() bool {
		sent := tg.Sent(chat)
		return len(sent) > before && sent[len(sent)-1].Plain == listed
	}, d.dump)
}
