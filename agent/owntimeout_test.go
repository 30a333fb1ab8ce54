package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// ownTimeoutTool bounds its calls itself (exec: exec.timeout).
type ownTimeoutTool struct {
	funcTool
	d time.Duration
}

func (o *ownTimeoutTool) CallTimeout() time.Duration { return o.d }

// A tool with its own timeout is not cut at agent.tool_timeout: exec's
// exec.timeout (60s) is longer than agent.tool_timeout (30s), and a command
// exec allows used to be killed by the agent after 30s.
func TestOwnTimeoutReplacesToolTimeout(t *testing.T) {
	o := Options{ToolTimeout: 50 * time.Millisecond, Sleep: func(context.Context, time.Duration) error { return nil }}.withDefaults()
	left := func(ctx context.Context, _ json.RawMessage) (string, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			return "no deadline", nil
		}
		return fmt.Sprint(time.Until(dl) > time.Second), nil
	}
	long := &ownTimeoutTool{funcTool: funcTool{name: "long", fn: left}, d: time.Hour}
	if run := runTool(context.Background(), o, long, nil); run.output != "true" {
		t.Fatalf("a tool with a 1h timeout of its own got %q: cut at agent.tool_timeout", run.output)
	}
	plain := &funcTool{name: "plain", fn: left}
	if run := runTool(context.Background(), o, plain, nil); run.output != "false" {
		t.Fatalf("a plain tool got %q, want agent.tool_timeout", run.output)
	}
	// The error names the timeout that applied.
	block := &ownTimeoutTool{funcTool: funcTool{name: "block", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}, d: 120 * time.Millisecond}
	run := runTool(context.Background(), o, block, nil)
	if !strings.Contains(run.output, "did not finish within 120ms") {
		t.Fatalf("output %q", run.output)
	}
}

// ApprovalPolicy.Also adds a reason per call (exec.approval, per persona):
// a chat is asked with that reason, a job is denied with it, a trusted
// persona runs without asking.
func TestApprovalPolicyAlso(t *testing.T) {
	p := ApprovalPolicy{Also: func(name string, info CallInfo) string {
		if name == "exec" && info.Persona != "coder" {
			return "exec.approval is on"
		}
		return ""
	}}
	tool := &funcTool{name: "exec"}
	var asked ApprovalRequest
	ask := func(_ context.Context, req ApprovalRequest) error { asked = req; return nil }
	chat := &turn{o: Options{Approve: p.Func()}, callInfo: CallInfo{SessionKey: "telegram:1", Persona: "assistant"}}
	if err := chat.approve(WithAsker(context.Background(), ask), memory.ToolCall{Name: "exec"}, tool); err != nil || asked.Reason != "exec.approval is on" {
		t.Fatalf("err %v, asked %+v", err, asked)
	}
	job := &turn{o: Options{Approve: p.Func()}, callInfo: CallInfo{SessionKey: "telegram:1", Persona: "assistant", JobName: "nightly"}}
	err := job.approve(context.Background(), memory.ToolCall{Name: "exec"}, tool)
	if err == nil || !strings.Contains(err.Error(), "exec.approval is on") || !strings.Contains(err.Error(), "nobody can approve it in this job") {
		t.Fatalf("job: err = %v", err)
	}
	if err := job.approve(WithPreapproved(context.Background(), []string{"exec"}), memory.ToolCall{Name: "exec"}, tool); err != nil {
		t.Fatalf("a job that lists exec in approve: %v", err)
	}
	trusted := &turn{o: Options{Approve: p.Func()}, callInfo: CallInfo{SessionKey: "telegram:1", Persona: "coder"}}
	if err := trusted.approve(context.Background(), memory.ToolCall{Name: "exec"}, tool); err != nil {
		t.Fatalf("trusted persona: %v", err)
	}
	if err := chat.approve(context.Background(), memory.ToolCall{Name: "other"}, &funcTool{name: "other"}); err != nil {
		t.Fatal(err)
	}
}
