package heartbeat

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
)

// deleteTool counts its runs.
type deleteTool struct{ runs atomic.Int32 }

func (d *deleteTool) Name() string            { return "delete_file" }
func (d *deleteTool) Description() string     { return "deletes a file" }
func (d *deleteTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (d *deleteTool) Call(context.Context, json.RawMessage) (string, error) {
	d.runs.Add(1)
	return "deleted", nil
}

// Issue 16: a job's turn never waits for approval. A call of a tool that
// needs approval is denied at once (the model answers with the refusal)
// unless the job lists the tool in its approve list; both are audited.
func TestJobApprovalDeniedUnlessListed(t *testing.T) {
	for _, tt := range []struct {
		name      string
		approve   []string
		wantRuns  int32
		wantText  string
		wantAudit string
	}{
		{"not listed: denied", nil, 0, "nobody can approve it in this job", "approval.deny"},
		{"listed by glob: runs", []string{"delete_*"}, 1, "deleted", "approval.preapproved"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
			job := JobSpec{Name: "cleanup", Kind: KindTask, Schedule: "0 18 * * *", Prompt: "clean up",
				DeliverTo: []string{"telegram:1"}, Approve: tt.approve}
			r := newJobsRig(t, now, time.UTC, job)
			tool := &deleteTool{}
			llm := fakellm.Start(t, func(req *fakellm.Request) fakellm.Response {
				if res := req.ToolResults(); len(res) > 0 {
					return fakellm.Response{Content: "result: " + res[len(res)-1].Content}
				}
				return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: "delete_file", Arguments: `{"path":"/srv"}`}}}
			})
			reg := agent.NewRegistry()
			if err := reg.Register(tool); err != nil {
				t.Fatal(err)
			}
			policy := agent.ApprovalPolicy{Require: []string{"delete_file"}, Now: r.clk.Now,
				Audit: func(ctx context.Context, rec memory.AuditRecord) { _ = r.store.Audit(ctx, rec) }}
			a, err := agent.New(agent.Options{BaseURL: llm.URL, APIKey: "sk-test", HTTPClient: llm.HTTPClient(),
				Sessions: r.store, MaxRetries: -1, Timeout: 5 * time.Second, Now: r.clk.Now, Location: time.UTC,
				Tools: reg, Approve: policy.Func()})
			if err != nil {
				t.Fatal(err)
			}
			j, err := NewJobs(Options{Store: r.store, Jobs: r.jobs, Location: time.UTC, Agent: a, Out: r.out, Now: r.clk.Now, Sent: r.sent})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.RunNow(context.Background(), "cleanup"); err != nil {
				t.Fatal(err)
			}
			if n := tool.runs.Load(); n != tt.wantRuns {
				t.Fatalf("the tool ran %d times, want %d", n, tt.wantRuns)
			}
			sent := r.out.Sent()
			if len(sent) != 1 || !strings.Contains(sent[0].Text, tt.wantText) {
				t.Fatalf("delivered %+v, want one message containing %q", sent, tt.wantText)
			}
			recs, err := r.store.ListAudit(context.Background(), memory.AuditFilter{Session: "job:cleanup"})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].Action != tt.wantAudit || recs[0].Actor != "job:cleanup" ||
				!strings.Contains(recs[0].Detail, "delete_file") {
				t.Fatalf("audit = %+v, want one %s by job:cleanup", recs, tt.wantAudit)
			}
		})
	}
}
