package tools_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/memory"
)

// queue is a tools.FileQueue that records, or refuses with refuse.
type queue struct {
	got    []tools.QueuedFile
	refuse error
}

func (q *queue) QueueFile(_ context.Context, f tools.QueuedFile) error {
	if q.refuse != nil {
		return q.refuse
	}
	q.got = append(q.got, f)
	return nil
}

// TestSendFileQueuesTheVersionItRead: send_file reads the file as the turn
// sees it (a staged write included) and queues its bytes, hash, type,
// name and caption; it refuses a missing file, a turn without a chat and
// whatever the queue refuses, each with an error the model can act on.
func TestSendFileQueuesTheVersionItRead(t *testing.T) {
	r := newFilesRig(t, memory.WorkspaceLimits{})
	if _, err := r.call(t, tools.NameWriteFile, map[string]any{"path": "out/report.csv", "content": "a,b\n1,2\n"}); err != nil {
		t.Fatal(err)
	}
	send := func(ctx context.Context, args map[string]any) (string, error) {
		raw, _ := json.Marshal(args)
		return tools.NewSendFile().Call(ctx, raw)
	}
	q := &queue{}
	res, err := send(tools.WithFileQueue(r.ctx, q), map[string]any{"path": "out/report.csv", "caption": " the numbers "})
	if err != nil {
		t.Fatalf("send_file: %v", err)
	}
	if !strings.Contains(res, "out/report.csv (8 bytes, text/csv") || !strings.Contains(res, "after your answer") {
		t.Errorf("result = %q", res)
	}
	sum := sha256.Sum256([]byte("a,b\n1,2\n"))
	if len(q.got) != 1 {
		t.Fatalf("queued %d files, want 1", len(q.got))
	}
	f := q.got[0]
	if f.Path != "out/report.csv" || f.Name != "report.csv" || string(f.Data) != "a,b\n1,2\n" || f.Size != 8 ||
		f.SHA256 != hex.EncodeToString(sum[:]) || f.Caption != "the numbers" || !strings.HasPrefix(f.MIME, "text/csv") {
		t.Errorf("queued %+v", f)
	}

	cases := []struct {
		name string
		ctx  context.Context
		path string
		want string
	}{
		{"missing file", tools.WithFileQueue(r.ctx, &queue{}), "nope.txt", "nope.txt"},
		{"no chat", r.ctx, "out/report.csv", "this turn answers no chat"},
		{"queue refuses", tools.WithFileQueue(r.ctx, &queue{refuse: errors.New("report.csv is 63 MiB; Telegram bots can send at most 50 MiB")}),
			"out/report.csv", "Telegram bots can send at most 50 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := send(tc.ctx, map[string]any{"path": tc.path})
			var pe *agent.PermanentError
			if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a permanent error naming %q", err, tc.want)
			}
		})
	}
}
