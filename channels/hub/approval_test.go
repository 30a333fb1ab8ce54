package hub_test

import (
	"cmp"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// sideEffectTool is a tool with an effect the tests count.
type sideEffectTool struct {
	name  string
	annot agent.ToolAnnotations
	mu    sync.Mutex
	calls []string
}

func (s *sideEffectTool) Name() string        { return s.name }
func (s *sideEffectTool) Description() string { return "deletes a file" }
func (s *sideEffectTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
}
func (s *sideEffectTool) Annotations() agent.ToolAnnotations { return s.annot }
func (s *sideEffectTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, string(args))
	return "deleted", nil
}

func (s *sideEffectTool) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// approvalLLM asks for one call of tool, then answers with the tool's result.
func approvalLLM(tool, args string) fakellm.Responder {
	return func(req *fakellm.Request) fakellm.Response {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Response{Content: "answer: " + res[len(res)-1].Content}
		}
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{{Name: tool, Arguments: args}}}
	}
}

// newApprovalRig is the rig with tools that need approval: delete_file (by
// agent.require_approval "delete_*") and the tools given.
func newApprovalRig(t *testing.T, llm *fakellm.Server, access channels.AccessPolicy, timeout time.Duration, tools ...agent.Tool) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), llm: llm, access: access}
	st, err := bolt.Open(filepath.Join(r.dir, "switchboard.db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	r.store = st
	reg := agent.NewRegistry()
	for _, tl := range tools {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	policy := agent.ApprovalPolicy{Require: []string{"delete_*"},
		Audit: func(ctx context.Context, rec memory.AuditRecord) { _ = st.Audit(ctx, rec) }}
	ag, err := agent.New(agent.Options{
		BaseURL: llm.URL, APIKey: "test-key", Model: "fake-model", MaxRetries: 1, RetryBase: time.Millisecond,
		Timeout: 5 * time.Second, HTTPClient: llm.HTTPClient(), Sessions: st, Tools: reg, Approve: policy.Func(),
	})
	if err != nil {
		t.Fatalf("agent: %v", err)
	}
	r.agent = ag
	r.ch = console.NewMemory("memory", 4000, 5*time.Millisecond)
	r.h = hub.NewHandler(hub.HandlerOptions{Store: st, Agent: ag, Access: access, ApprovalTimeout: timeout,
		Outbound: outbound.New(st, outbound.Options{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})})
	r.h.Register(r.ch)
	r.ch.Attach(r.h)
	t.Cleanup(r.stop)
	return r
}

// waitText waits until a message containing want reached target.
func (r *rig) waitText(target, want string) console.Sent {
	r.t.Helper()
	var hit console.Sent
	r.ch.WaitFor(r.t, target, wait, "a message containing "+want, func(s []console.Sent) bool {
		for _, m := range s {
			if strings.Contains(m.Text, want) {
				hit = m
				return true
			}
		}
		return false
	})
	return hit
}

// drain closes the handler (every turn and command finishes) and keeps the
// store open for the assertions.
func (r *rig) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	r.h.Close(ctx)
}

// audits returns the audit records of session whose action starts with prefix.
func (r *rig) audits(session, prefix string) []memory.AuditRecord {
	r.t.Helper()
	recs, err := r.store.ListAudit(context.Background(), memory.AuditFilter{Session: session})
	if err != nil {
		r.t.Fatal(err)
	}
	slices.SortFunc(recs, func(a, b memory.AuditRecord) int { return cmp.Compare(a.ID, b.ID) }) // oldest first
	var out []memory.AuditRecord
	for _, rec := range recs {
		if strings.HasPrefix(rec.Action, prefix) {
			out = append(out, rec)
		}
	}
	return out
}

func actions(recs []memory.AuditRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Action+" by "+r.Actor)
	}
	return out
}

// Issue 16: a call of a tool listed in agent.require_approval waits; the
// chat gets one message naming the tool and its arguments; /approve from the
// chat's user runs it exactly once and the model answers with its result.
func TestApprovalApproveRunsOnce(t *testing.T) {
	tool := &sideEffectTool{name: "delete_file"}
	llm := fakellm.Start(t, approvalLLM("delete_file", `{"path": "/tmp/report.txt"}`))
	r := newApprovalRig(t, llm, openAccess(), time.Minute, tool)
	r.say("c1", "ann", "delete my report")
	ask := r.waitText("memory:c1", "Approval needed")
	for _, want := range []string{"delete_file", `{"path":"/tmp/report.txt"}`, "/approve", "/deny"} {
		if !strings.Contains(ask.Text, want) {
			t.Errorf("approval message %q lacks %q", ask.Text, want)
		}
	}
	if n := tool.count(); n != 0 {
		t.Fatalf("the tool ran %d times before approval", n)
	}
	if name, ok := r.h.PendingApproval("memory:c1"); !ok || name != "delete_file" {
		t.Fatalf("PendingApproval = %q, %v", name, ok)
	}
	r.say("c1", "ann", "/approve")
	r.waitText("memory:c1", "Approved")
	r.waitText("memory:c1", "answer:")
	r.drain()
	if n := tool.count(); n != 1 {
		t.Fatalf("the tool ran %d times, want exactly 1", n)
	}
	got := actions(r.audits("memory:c1", "approval."))
	want := []string{"approval.request by memory:user:ann", "approval.approve by memory:user:ann"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("audit = %v, want %v", got, want)
	}
	if recs := r.audits("memory:c1", "approval.approve"); !strings.Contains(recs[0].Detail, "/tmp/report.txt") {
		t.Errorf("audit detail %q lacks the arguments", recs[0].Detail)
	}
}

// /deny and the timeout refuse the call: the tool never runs and the model
// answers with the refusal it got as the tool's result; both are audited.
func TestApprovalDenyAndTimeout(t *testing.T) {
	for _, tt := range []struct {
		name      string
		timeout   time.Duration
		deny      bool
		wantReply string
		wantAudit []string
	}{
		{"deny", time.Minute, true, "denied the call of delete_file",
			[]string{"approval.request by memory:user:ann", "approval.deny by memory:user:ann"}},
		{"timeout", 30 * time.Millisecond, false, "nobody approved delete_file within 30ms",
			[]string{"approval.request by memory:user:ann", "approval.timeout by system"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tool := &sideEffectTool{name: "delete_file"}
			llm := fakellm.Start(t, approvalLLM("delete_file", `{"path":"/etc/passwd"}`))
			r := newApprovalRig(t, llm, openAccess(), tt.timeout, tool)
			r.say("c1", "ann", "delete it")
			r.waitText("memory:c1", "Approval needed")
			if tt.deny {
				r.say("c1", "ann", "/deny")
				r.waitText("memory:c1", "Denied")
			}
			r.waitText("memory:c1", tt.wantReply)
			r.drain()
			if n := tool.count(); n != 0 {
				t.Fatalf("the refused tool ran %d times", n)
			}
			if got := actions(r.audits("memory:c1", "approval.")); strings.Join(got, "|") != strings.Join(tt.wantAudit, "|") {
				t.Fatalf("audit = %v, want %v", got, tt.wantAudit)
			}
			if _, ok := r.h.PendingApproval("memory:c1"); ok {
				t.Fatal("an approval is still pending")
			}
		})
	}
}

// In a group only the user whose message started the turn, or an admin, may
// decide: a stranger's /approve is refused with a short reply and audited,
// and the call keeps waiting; an admin's /approve then runs it.
func TestApprovalStrangerRefusedAdminAllowed(t *testing.T) {
	tool := &sideEffectTool{name: "delete_file"}
	llm := fakellm.Start(t, approvalLLM("delete_file", `{"path":"/tmp/a"}`))
	access := openAccess()
	access.Admins = []string{"memory:user:root"}
	r := newApprovalRig(t, llm, access, time.Minute, tool)
	r.say("g1", "ann", "delete /tmp/a", inGroup(true))
	r.waitText("memory:g1", "Approval needed")
	r.say("g1", "mallory", "/approve", inGroup(true))
	r.waitText("memory:g1", "only Ann or an admin")
	if tool.count() != 0 {
		t.Fatal("a stranger's /approve ran the tool")
	}
	if _, ok := r.h.PendingApproval("memory:g1"); !ok {
		t.Fatal("the stranger's /approve ended the wait")
	}
	r.say("g1", "root", "/approve", inGroup(true))
	r.waitText("memory:g1", "answer:")
	r.drain()
	if n := tool.count(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
	want := []string{"approval.request by memory:user:ann", "approval.refused by memory:user:mallory",
		"approval.approve by memory:user:root"}
	if got := actions(r.audits("memory:g1", "approval.")); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("audit = %v, want %v", got, want)
	}
}

// An MCP-style tool whose annotations say destructive (and not read-only)
// needs approval without being listed; a read-only one does not.
func TestApprovalDestructiveAnnotation(t *testing.T) {
	for _, tt := range []struct {
		name     string
		annot    agent.ToolAnnotations
		wantWait bool
	}{
		{"destructive waits", agent.ToolAnnotations{Destructive: true}, true},
		{"read-only runs", agent.ToolAnnotations{ReadOnly: true, Destructive: true}, false},
		{"unannotated runs", agent.ToolAnnotations{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tool := &sideEffectTool{name: "files__wipe", annot: tt.annot}
			llm := fakellm.Start(t, approvalLLM("files__wipe", `{"path":"/"}`))
			r := newApprovalRig(t, llm, openAccess(), time.Minute, tool)
			r.say("c1", "ann", "wipe")
			if tt.wantWait {
				r.waitText("memory:c1", "Approval needed")
				r.say("c1", "ann", "/approve")
			}
			r.waitText("memory:c1", "answer:")
			r.drain()
			if n := len(r.audits("memory:c1", "approval.request")); (n == 1) != tt.wantWait {
				t.Fatalf("%d approval requests audited, want wait=%v", n, tt.wantWait)
			}
		})
	}
}

// /approve or /deny with nothing pending says so; nothing is audited as a
// decision.
func TestApprovalNothingPending(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Text("hi"))
	r := newApprovalRig(t, llm, openAccess(), time.Minute)
	r.say("c1", "ann", "/approve")
	r.waitText("memory:c1", "Nothing is waiting for approval")
	r.say("c1", "ann", "/deny")
	r.ch.WaitSent(t, "memory:c1", 2, wait)
	r.drain()
	if recs := r.audits("memory:c1", "approval."); len(recs) != 0 {
		t.Fatalf("audited %v", actions(recs))
	}
}

// Shutdown while a call waits for approval denies it at once (Close does not
// wait for the approval timeout), the tool never runs, and the cancellation
// is audited.
func TestApprovalShutdownCancelsWait(t *testing.T) {
	tool := &sideEffectTool{name: "delete_file"}
	llm := fakellm.Start(t, approvalLLM("delete_file", `{}`))
	r := newApprovalRig(t, llm, openAccess(), time.Hour, tool)
	r.say("c1", "ann", "delete")
	r.waitText("memory:c1", "Approval needed")
	done := make(chan struct{})
	go func() { r.drain(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("shutdown waited for the pending approval")
	}
	if tool.count() != 0 {
		t.Fatal("the tool ran at shutdown")
	}
	if got := actions(r.audits("memory:c1", "approval.cancel")); len(got) != 1 {
		t.Fatalf("cancel audits = %v, want one", got)
	}
}

// /stop while a call waits cancels the turn and the wait.
func TestApprovalStopCancelsWait(t *testing.T) {
	tool := &sideEffectTool{name: "delete_file"}
	llm := fakellm.Start(t, approvalLLM("delete_file", `{}`))
	r := newApprovalRig(t, llm, openAccess(), time.Hour, tool)
	r.say("c1", "ann", "delete")
	r.waitText("memory:c1", "Approval needed")
	r.say("c1", "ann", "/stop")
	r.waitText("memory:c1", "Stopped.")
	r.say("c1", "ann", "/approve")
	r.waitText("memory:c1", "Nothing is waiting for approval")
	r.drain()
	if tool.count() != 0 {
		t.Fatal("the tool ran after /stop")
	}
}
