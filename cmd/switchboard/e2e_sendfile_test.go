package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Issue 31 part 3, on the built binary: the model writes a file and sends
// it with send_file; Telegram receives the answer, then the file as a
// document — once, with its name, bytes and caption — and a restart sends
// nothing again.
func TestBinarySendFile(t *testing.T) {
	tg := faketelegram.New(t, faketelegram.Options{})
	addr := freePort(t)
	const content = "region,total\nnorth,42\n"
	llm := fakellm.Start(t, func(r *fakellm.Request) fakellm.Response {
		switch n := len(r.ToolResults()); {
		case !r.HasTools():
			return fakellm.Response{Content: "ok"}
		case n == 0:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "write_file",
				Arguments: fmt.Sprintf(`{"path":"reports/q3.csv","content":%q}`, content)}}}
		case n == 1:
			return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "send_file",
				Arguments: `{"path":"reports/q3.csv","caption":"Q3 by region"}`}}}
		default:
			return fakellm.Response{Content: "Here is the Q3 report."}
		}
	})
	cfg := writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
  max_retries: 0
agent:
  tools: [write_file, send_file]
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
`, llm.URL, tg.URL(), addr))
	env := cleanEnv("SB_E2E_KEY="+e2eKey, "SB_TG_TOKEN="+faketelegram.DefaultToken)
	const chat = 4343
	d := startDaemonBin(t, env, cfg, addr)
	tg.UserSays(chat, "the q3 report please")
	awaitCond(t, "the document", func() bool { return len(tg.Uploads(chat)) > 0 }, d.dump)
	d.stop(t)
	d = startDaemonBin(t, env, cfg, addr) // a restart delivers nothing again
	tg.UserSays(chat, "/help")
	awaitCond(t, "the /help answer", func() bool {
		sent := tg.Sent(chat)
		return len(sent) > 0 && strings.Contains(sent[len(sent)-1].Plain, "/files")
	}, d.dump)
	d.stop(t)

	ups := tg.Uploads(chat)
	if len(ups) != 1 {
		t.Fatalf("Telegram got %d uploads, want 1: %+v", len(ups), ups)
	}
	if u := ups[0]; u.Method != "sendDocument" || u.Name != "q3.csv" || string(u.Data) != content || u.Caption != "Q3 by region" {
		t.Errorf("upload = %s %s %q %q", u.Method, u.Name, u.Data, u.Caption)
	}
	var answer, doc int
	for i, m := range tg.Sent(chat) {
		switch {
		case strings.Contains(m.Plain, "Here is the Q3 report."):
			answer = i + 1
		case m.MessageID == ups[0].MessageID:
			doc = i + 1
		}
	}
	if answer == 0 || doc == 0 || answer > doc {
		t.Errorf("the answer (message %d) must come before the document (message %d)", answer, doc)
	}
}
