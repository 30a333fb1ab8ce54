package hub_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// startSendFile is crashRig.start with the file tools and send_file.
func startSendFile(c *crashRig) {
	c.t.Helper()
	st, err := bolt.Open(filepath.Join(c.dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		c.t.Fatalf("open store: %v", err)
	}
	reg := agent.NewRegistry()
	for _, tl := range append(tools.NewFiles(tools.FilesOptions{}), tools.NewSendFile()) {
		if err := reg.Register(tl); err != nil {
			c.t.Fatal(err)
		}
	}
	ag, err := agent.New(agent.Options{
		BaseURL: c.llm.URL, APIKey: "test-key", Model: "fake-model",
		MaxRetries: 1, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond,
		Timeout: 10 * time.Second, HTTPClient: c.llm.HTTPClient(), Sessions: st, Tools: reg, Workspace: st,
	})
	if err != nil {
		c.t.Fatalf("agent: %v", err)
	}
	c.store = st
	c.h = hub.NewHandler(hub.HandlerOptions{
		Store: st, Agent: ag, Access: openAccess(),
		Outbound: outbound.New(st, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}),
	})
	c.h.Register(c.ch)
	c.ch.Attach(c.h)
}

// fileScript is a model that writes the files in one step, sends them one a
// step, then answers.
func fileScript(files map[string]string, order []string, answer string) (func(*fakellm.Request) fakellm.Response, *atomic.Value) {
	var lastResults atomic.Value // the tool results the model saw last
	return func(r *fakellm.Request) fakellm.Response {
		if !r.HasTools() {
			return fakellm.Response{Content: answer}
		}
		res := r.ToolResults()
		var seen []string
		for _, m := range res {
			seen = append(seen, m.Content)
		}
		lastResults.Store(strings.Join(seen, "\n"))
		var calls []fakellm.ToolCall
		switch len(res) {
		case 0:
			for _, p := range order {
				calls = append(calls, fakellm.ToolCall{Name: tools.NameWriteFile,
					Arguments: fmt.Sprintf(`{"path":%q,"content":%q}`, p, files[p])})
			}
		default: // one send_file a step, so the files queue in order
			i := len(res) - len(order)
			if i >= len(order) {
				return fakellm.Response{Content: answer}
			}
			p := order[i]
			calls = append(calls, fakellm.ToolCall{Name: tools.NameSendFile,
				Arguments: fmt.Sprintf(`{"path":%q,"caption":"here is %s"}`, p, p)})
		}
		return fakellm.Response{ToolCalls: calls}
	}, &lastResults
}

func sayFile(t *testing.T, ch *console.Memory, chat, id, text string) {
	t.Helper()
	if err := ch.Say(context.Background(), channels.Message{ChatID: chat, MessageID: id,
		Sender: channels.Sender{ID: "ann", Name: "Ann"}, Text: text, Direct: true}); err != nil {
		t.Fatal(err)
	}
}

// seqOf is the Memory channel's sequence number in a message or file id.
func seqOf(t *testing.T, id string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(id[1:], "%d", &n); err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	return n
}

// TestSendFileDeliversAfterTheAnswer: a file the model wrote and sent
// reaches the chat as an attachment — its name, bytes, type and caption —
// once, after the answer text, and its outbox intent has a receipt.
func TestSendFileDeliversAfterTheAnswer(t *testing.T) {
	script, _ := fileScript(map[string]string{"reports/q3.csv": "region,total\nnorth,42\n"}, []string{"reports/q3.csv"},
		"Here is the Q3 report.")
	c := &crashRig{t: t, dir: t.TempDir(), llm: fakellm.Start(t, script), ch: console.NewMemory("memory", 4000, 5*time.Millisecond)}
	startSendFile(c)
	t.Cleanup(c.crash)
	const target = "memory:dm-ann"
	sayFile(t, c.ch, "dm-ann", "1", "the q3 report please")
	files := c.ch.WaitFiles(t, target, 1, wait)
	c.quiesce()

	if len(files) != 1 {
		t.Fatalf("the chat got %d files, want 1", len(files))
	}
	f := files[0]
	if f.Name != "q3.csv" || string(f.Data) != "region,total\nnorth,42\n" || f.Caption != "here is reports/q3.csv" ||
		!strings.HasPrefix(f.MIME, "text/csv") {
		t.Errorf("file = {%s %q %q %s}, want q3.csv with the written bytes, the caption and text/csv", f.Name, f.Data, f.Caption, f.MIME)
	}
	msgs := c.ch.Sent(target)
	if len(msgs) != 1 || msgs[0].Text != "Here is the Q3 report." {
		t.Fatalf("the chat shows %+v, want the answer once", msgs)
	}
	if seqOf(t, msgs[0].ID) > seqOf(t, f.ID) {
		t.Errorf("the file (%s) came before the answer (%s)", f.ID, msgs[0].ID)
	}
	st, err := bolt.Open(filepath.Join(c.dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.OutboxForTurn(context.Background(), "in-1")
	if err != nil {
		t.Fatal(err)
	}
	var fileRecs []memory.OutboxRecord
	for _, r := range recs {
		if outbound.IsFileChunk(r.Chunk) {
			fileRecs = append(fileRecs, r)
		}
	}
	if len(fileRecs) != 1 || fileRecs[0].Status != memory.OutboxDelivered || fileRecs[0].PlatformID != f.ID ||
		!strings.Contains(fileRecs[0].Text, `"path":"reports/q3.csv"`) {
		t.Errorf("file outbox records = %+v, want one delivered intent of reports/q3.csv with id %s", fileRecs, f.ID)
	}
	if pending, _ := st.InboxPending(context.Background()); len(pending) != 0 {
		t.Errorf("inbox items left after the delivery: %+v", pending)
	}
}

// TestSendFileTooLargeIsRefusedWithTheLimit: a file over the platform's
// limit is not sent; the model is told the size and the limit (so the
// answer can say it) and nothing is attempted.
func TestSendFileTooLargeIsRefusedWithTheLimit(t *testing.T) {
	script, seen := fileScript(map[string]string{"big.txt": strings.Repeat("x", 3000)}, []string{"big.txt"}, "Could not send it.")
	c := &crashRig{t: t, dir: t.TempDir(), llm: fakellm.Start(t, script), ch: console.NewMemory("memory", 4000, 5*time.Millisecond)}
	startSendFile(c)
	t.Cleanup(c.crash)
	c.ch.SetMaxFileSize(2048)
	sayFile(t, c.ch, "dm-ann", "1", "send big.txt")
	c.ch.WaitSent(t, "memory:dm-ann", 1, wait)
	c.quiesce()
	if n := c.ch.FileCalls(); n != 0 {
		t.Errorf("%d file sends attempted, want none", n)
	}
	want := "big.txt is 2.9 KiB; Memory bots can send at most 2 KiB. It stays in this chat's workspace as big.txt"
	if got, _ := seen.Load().(string); !strings.Contains(got, want) {
		t.Errorf("the model saw %q, want it to contain %q", got, want)
	}
}

// TestSendFileExactlyOnceAcrossACrash: the process is killed while the
// second of two files is being sent; after the restart the replay sends
// only that file — the answer and the first file are not repeated — and the
// inbox is cleared once the last file has its receipt.
func TestSendFileExactlyOnceAcrossACrash(t *testing.T) {
	script, _ := fileScript(map[string]string{"a.txt": "first file\n", "b.txt": "second file\n"},
		[]string{"a.txt", "b.txt"}, "Both files follow.")
	c := &crashRig{t: t, dir: t.TempDir(), llm: fakellm.Start(t, script), ch: console.NewMemory("memory", 4000, 5*time.Millisecond)}
	startSendFile(c)
	t.Cleanup(c.crash)
	const target = "memory:dm-ann"
	killed := make(chan struct{})
	c.ch.OnSendFile(func(ctx context.Context, f channels.OutgoingFile) error {
		if f.Name != "b.txt" {
			return nil
		}
		close(killed)
		<-ctx.Done() // the process dies during the platform call
		return ctx.Err()
	})
	sayFile(t, c.ch, "dm-ann", "1", "both files please")
	select {
	case <-killed:
	case <-time.After(wait):
		t.Fatal("the second file was never sent")
	}
	c.crash()
	if got := c.ch.Files(target); len(got) != 1 || got[0].Name != "a.txt" {
		t.Fatalf("before the restart the chat has files %+v, want a.txt alone", got)
	}

	c.ch.OnSendFile(nil)
	startSendFile(c)
	if _, err := c.h.Replay(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.ch.WaitFiles(t, target, 2, wait)
	c.quiesce()

	var names []string
	for _, f := range c.ch.Files(target) {
		names = append(names, f.Name+"="+strings.TrimSpace(string(f.Data)))
	}
	if got := strings.Join(names, ", "); got != "a.txt=first file, b.txt=second file" {
		t.Errorf("the chat got files %s, want a.txt and b.txt once each", got)
	}
	if msgs := c.ch.Sent(target); len(msgs) != 1 || msgs[0].Text != "Both files follow." {
		t.Errorf("the chat shows %+v, want the answer once", msgs)
	}
	st, err := bolt.Open(filepath.Join(c.dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if pending, _ := st.InboxPending(context.Background()); len(pending) != 0 {
		t.Errorf("inbox items left after the replay: %+v", pending)
	}
}
