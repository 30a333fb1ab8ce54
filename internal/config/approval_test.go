package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Issue 16: agent.require_approval, agent.approval_timeout and jobs[].approve.
func TestApprovalKeys(t *testing.T) {
	d := Default().Agent
	if len(d.RequireApproval) != 0 || d.ApprovalTimeout != 5*time.Minute {
		t.Fatalf("defaults: require_approval %v, approval_timeout %v", d.RequireApproval, d.ApprovalTimeout)
	}
	c := mustParse(t, `
agent:
  require_approval: [send_message, "web_*"]
  approval_timeout: 90s
jobs:
  - name: digest
    kind: task
    schedule: "0 9 * * *"
    prompt: summarize
    deliver_to: ["telegram:42"]
    approve: [send_message]
`, emptyEnv)
	if !slices.Equal(c.Agent.RequireApproval, []string{"send_message", "web_*"}) || c.Agent.ApprovalTimeout != 90*time.Second {
		t.Fatalf("agent = %v %v", c.Agent.RequireApproval, c.Agent.ApprovalTimeout)
	}
	if !slices.Equal(c.Jobs[0].Approve, []string{"send_message"}) {
		t.Fatalf("jobs[0].approve = %v", c.Jobs[0].Approve)
	}
}

func TestApprovalKeysValidation(t *testing.T) {
	job := "jobs:\n  - {name: j, kind: task, schedule: \"0 9 * * *\", prompt: p, deliver_to: [\"telegram:42\"], approve: %s}\n"
	for _, tc := range []struct {
		name, yaml, wantKey, wantText string
	}{
		{"bad glob", "agent:\n  require_approval: [\"web_[\"]\n", "agent.require_approval[0]", "glob"},
		{"empty entry", "agent:\n  require_approval: [\"\"]\n", "agent.require_approval[0]", "is empty"},
		{"unknown tool", "agent:\n  require_approval: [send_mesage]\n", "agent.require_approval[0]", "send_mesage"},
		{"zero timeout", "agent:\n  approval_timeout: 0s\n", "agent.approval_timeout", ""},
		{"job bad glob", strings.Replace(job, "%s", `["web_["]`, 1), "jobs[0].approve[0]", "glob"},
		{"job unknown tool", strings.Replace(job, "%s", "[nope]", 1), "jobs[0].approve[0]", "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := parseErr(t, tc.yaml, emptyEnv)
			if !strings.Contains(msg, tc.wantKey) || !strings.Contains(msg, tc.wantText) {
				t.Fatalf("error %q; want it to name %s and say %q", msg, tc.wantKey, tc.wantText)
			}
		})
	}
}
