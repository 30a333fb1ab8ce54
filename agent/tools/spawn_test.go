package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/memory"
)

type fakeSpawner struct {
	got []memory.TaskRecord
	err error
}

func (f *fakeSpawner) Spawn(_ context.Context, t memory.TaskRecord) (memory.TaskRecord, error) {
	if f.err != nil {
		return memory.TaskRecord{}, f.err
	}
	f.got = append(f.got, t)
	t.ID = "t7"
	return t, nil
}

func TestSpawnTool(t *testing.T) {
	chat := agent.CallInfo{SessionKey: "telegram:1", Persona: "pirate", TurnID: "in-1"}
	job := agent.CallInfo{SessionKey: "job:daily", Persona: "reporter", TurnID: "x", JobName: "daily", DeliverTo: []string{"slack:C1"}}
	task := agent.CallInfo{SessionKey: "telegram:1#task:t3", TurnID: "y", JobName: "task:t3"}
	args := `{"title":"tides","prompt":"find the tides","tools":["web_*","spawn"]}`
	for _, tc := range []struct {
		name    string
		ci      *agent.CallInfo
		args    string
		err     error
		want    string // the answer, or the error's text
		wantRec memory.TaskRecord
	}{
		{name: "chat", ci: &chat, args: args, want: `started task t7 ("tides")`,
			wantRec: memory.TaskRecord{Chat: "telegram:1", Persona: "pirate", Title: "tides", Prompt: "find the tides", Tools: []string{"web_*"}}},
		{name: "job", ci: &job, args: `{"title":"r","prompt":"p"}`, want: "started task t7",
			wantRec: memory.TaskRecord{Chat: "job:daily", Persona: "reporter", Title: "r", Prompt: "p", Job: "daily", DeliverTo: []string{"slack:C1"}}},
		{name: "a task cannot spawn", ci: &task, args: args, want: "a background task cannot start tasks"},
		{name: "no turn", args: args, want: "no chat to report to"},
		{name: "blank prompt", ci: &chat, args: `{"title":"x","prompt":"   "}`, want: "must not be empty"},
		{name: "limit", ci: &chat, args: args, err: errors.New("this chat already has 3 background tasks running or queued"),
			want: "already has 3 background tasks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := &fakeSpawner{err: tc.err}
			ctx := context.Background()
			if tc.ci != nil {
				ctx = agent.WithCallInfo(ctx, *tc.ci)
			}
			out, err := tools.NewSpawn(sp).Call(ctx, json.RawMessage(tc.args))
			text := out
			if err != nil {
				text = err.Error()
			}
			if !strings.Contains(text, tc.want) {
				t.Fatalf("got %q (err %v), want %q", out, err, tc.want)
			}
			if tc.wantRec.Chat == "" {
				if len(sp.got) != 0 {
					t.Fatalf("spawned %+v", sp.got)
				}
				return
			}
			if len(sp.got) != 1 {
				t.Fatalf("spawned %d tasks", len(sp.got))
			}
			g := sp.got[0]
			if g.Key == "" || !strings.HasPrefix(g.Key, tc.ci.TurnID+"|") {
				t.Errorf("key %q does not name the turn", g.Key)
			}
			g.Key = ""
			w := tc.wantRec
			if g.Chat != w.Chat || g.Persona != w.Persona || g.Title != w.Title || g.Prompt != w.Prompt || g.Job != w.Job ||
				strings.Join(g.Tools, ",") != strings.Join(w.Tools, ",") || strings.Join(g.DeliverTo, ",") != strings.Join(w.DeliverTo, ",") {
				t.Errorf("record %+v, want %+v", g, w)
			}
		})
	}
}

// The same call in a replayed turn (same turn id) carries the same key, so
// the store returns the first task; another turn's call is a new task.
func TestSpawnKeyIsPerTurnAndCall(t *testing.T) {
	sp := &fakeSpawner{}
	call := func(turn, args string) {
		t.Helper()
		ctx := agent.WithCallInfo(context.Background(), agent.CallInfo{SessionKey: "telegram:1", TurnID: turn})
		if _, err := tools.NewSpawn(sp).Call(ctx, json.RawMessage(args)); err != nil {
			t.Fatal(err)
		}
	}
	call("in-1", `{"title":"a","prompt":"p"}`)
	call("in-1", `{"title":"a","prompt":"p"}`)
	call("in-2", `{"title":"a","prompt":"p"}`)
	call("in-1", `{"title":"a","prompt":"q"}`)
	k := func(i int) string { return sp.got[i].Key }
	if k(0) != k(1) || k(0) == k(2) || k(0) == k(3) {
		t.Fatalf("keys %q %q %q %q", k(0), k(1), k(2), k(3))
	}
}
