package agent

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// wsTools are a write and a read tool over the turn's overlay, as the file
// tools (agent/tools) use it.
func wsTools(after func(ctx context.Context)) (*funcTool, *funcTool) {
	write := &funcTool{name: "put", schema: `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`,
		fn: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var a struct{ Path, Content string }
			_ = json.Unmarshal(raw, &a)
			ci, _ := CallInfoFrom(ctx)
			fi, err := ci.Files.Write(ctx, a.Path, []byte(a.Content), 0)
			if err != nil {
				return "", Permanent(err)
			}
			if after != nil {
				after(ctx)
			}
			return "wrote " + fi.Path, nil
		}}
	read := &funcTool{name: "get", schema: `{"type":"object","properties":{"path":{"type":"string"}}}`,
		fn: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var a struct{ Path string }
			_ = json.Unmarshal(raw, &a)
			ci, _ := CallInfoFrom(ctx)
			data, _, err := ci.Files.Read(ctx, a.Path)
			return string(data), err
		}}
	return write, read
}

// failingSessions is a store whose turn commit fails (the process died
// before it): nothing of the turn reaches the store.
type failingSessions struct{ *bolt.Store }

func (failingSessions) AppendTurn(context.Context, string, memory.Turn) error {
	return errors.New("killed before the commit")
}

func openWS(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestTurnFilesAreCommittedWithTheTurn(t *testing.T) {
	const key = "telegram:7"
	tests := []struct {
		name      string
		crash     bool
		wantFiles []string
	}{
		{"committed", false, []string{"notes.md"}},
		{"killed before the commit", true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openWS(t)
			write, read := wsTools(nil)
			resp := toolsThenAnswer("saved",
				[]fakellm.ToolCall{call("put", `{"path":"./notes.md","content":"tea"}`)},
				[]fakellm.ToolCall{call("get", `{"path":"notes.md"}`)})
			h := newHarness(t, resp, func(o *Options) {
				o.Workspace = st
				o.Sessions = st
				if tc.crash {
					o.Sessions = failingSessions{st}
				}
			}, write, read)
			res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "note tea"})
			if tc.crash != (err != nil) {
				t.Fatalf("err = %v", err)
			}
			if got := read.Calls(); len(got) != 1 {
				t.Fatalf("read calls = %v", got)
			}
			// The read within the turn saw the staged write.
			reqs := h.srv.Requests()
			msgs := reqs[len(reqs)-1].Body.Messages
			if last := msgs[len(msgs)-1].Content; !strings.Contains(last, "\ntea\n") {
				t.Fatalf("the turn's own read did not see its write: %q", last)
			}
			if res.Text != "saved" {
				t.Fatalf("answer = %q", res.Text)
			}
			list, err := st.ListFiles(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range list {
				got = append(got, f.Path)
			}
			if strings.Join(got, ",") != strings.Join(tc.wantFiles, ",") {
				t.Fatalf("stored files = %v, want %v", got, tc.wantFiles)
			}
			turns, _ := st.SessionTurns(context.Background(), key)
			if want := map[bool]int{false: 1, true: 0}[tc.crash]; len(turns) != want {
				t.Fatalf("turns = %d, want %d", len(turns), want)
			}
		})
	}
}

func TestTurnFilesOverABoundAtCommitAreDroppedAndSaid(t *testing.T) {
	const key = "slack:C9"
	st := openWS(t)
	limits := memory.WorkspaceLimits{MaxBytes: 50, MaxFiles: 10, MaxFile: 50}
	// While the turn runs, something else fills the workspace.
	write, _ := wsTools(func(ctx context.Context) {
		err := st.ApplyFiles(ctx, key, memory.WorkspaceChange{Writes: []memory.FileWrite{{Path: "other", Content: []byte(strings.Repeat("o", 20))}}}, limits)
		if err != nil {
			t.Error(err)
		}
	})
	resp := toolsThenAnswer("done", []fakellm.ToolCall{call("put", `{"path":"mine","content":"`+strings.Repeat("m", 40)+`"}`)})
	h := newHarness(t, resp, func(o *Options) {
		o.Workspace, o.Sessions = st, st
		o.WorkspaceLimits = func() memory.WorkspaceLimits { return limits }
	}, write)
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: key, Text: "write"})
	if err != nil {
		t.Fatal(err)
	}
	want := "done\n\nFiles not saved: workspace.max_bytes (50 bytes) would be exceeded: the workspace would hold 60 bytes"
	if res.Text != want {
		t.Fatalf("answer = %q, want %q", res.Text, want)
	}
	turns, _ := st.SessionTurns(context.Background(), key)
	if len(turns) != 1 || turns[0].Answer != want {
		t.Fatalf("turns = %+v", turns)
	}
	list, _ := st.ListFiles(context.Background(), key)
	if len(list) != 1 || list[0].Path != "other" {
		t.Fatalf("files = %+v, want only the other writer's", list)
	}
}
