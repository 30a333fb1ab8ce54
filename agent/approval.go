package agent

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/memory"
)

// Approval of tool calls (issue 16). A tool call needs a person's approval
// when its tool's name matches one of ApprovalPolicy.Require (globs, as
// path.Match: "mcp_fs__*", "shell") or when the tool's annotations say it is
// destructive and not read-only (MCP's destructiveHint). Such a call then:
//
//   - in a chat turn, waits for the chat's answer: the handler puts an Asker
//     into the turn's context (WithAsker) that asks in the chat and returns
//     nil (approved) or the reason it was not;
//   - in a turn without an Asker (jobs, heartbeat, `switchboard ask`) never
//     waits: it runs only when the turn's context lists the tool in its
//     pre-approved list (WithPreapproved: a job's `approve` list), and is
//     denied otherwise.
//
// A denied call is a tool error the model sees (the turn ends with
// FinishToolDenied and the model's closing answer).

// ApprovalSummaryMax bounds the argument summary shown to the approver, in
// characters.
const ApprovalSummaryMax = 300

// ApprovalRequest describes one tool call that needs a person's approval.
type ApprovalRequest struct {
	Call        memory.ToolCall
	Annotations ToolAnnotations
	Info        CallInfo // the turn it runs in
	// Reason says why approval is needed ("listed in agent.require_approval"
	// or "the tool says it is destructive").
	Reason string
}

// ArgsSummary is the call's arguments on one line, compacted and cut to
// ApprovalSummaryMax characters (with "…" when cut).
func (r ApprovalRequest) ArgsSummary() string {
	return SummarizeArgs(r.Call.Arguments, ApprovalSummaryMax)
}

// SummarizeArgs renders raw JSON arguments on one line (compact JSON when
// they parse; every run of white space becomes one space) and cuts them to
// maxChars characters, ending with "…" when cut.
func SummarizeArgs(raw string, maxChars int) string {
	s := canonicalArgs(raw)
	s = strings.Join(strings.Fields(s), " ")
	if maxChars <= 0 || utf8.RuneCountInString(s) <= maxChars {
		return s
	}
	r := []rune(s)
	return string(r[:max(0, maxChars-1)]) + "…"
}

// Asker asks a person to approve req and waits for the answer: nil means
// approved; an error is the reason it was not (denied, timed out, canceled),
// which the model sees.
type Asker func(ctx context.Context, req ApprovalRequest) error

type (
	askerKey       struct{}
	preapprovedKey struct{}
	approvalKey    struct{}
)

// WithAsker returns ctx with the Asker of a chat turn.
func WithAsker(ctx context.Context, ask Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, ask)
}

// WithPreapproved returns ctx with the tools (names or globs) a turn that
// cannot ask anyone (a job's) may call without approval.
func WithPreapproved(ctx context.Context, tools []string) context.Context {
	return context.WithValue(ctx, preapprovedKey{}, append([]string(nil), tools...))
}

// approvalInfo is what the turn tells the ApproveFunc about a call beyond
// the call itself.
type approvalInfo struct {
	annot ToolAnnotations
	info  CallInfo
}

// approve runs the configured ApproveFunc for c with the tool's annotations
// and the turn's CallInfo in the context.
func (t *turn) approve(ctx context.Context, c memory.ToolCall, tool Tool) error {
	if t.o.Approve == nil {
		return nil
	}
	ctx = context.WithValue(ctx, approvalKey{}, approvalInfo{annot: AnnotationsOf(tool), info: t.callInfo})
	return t.o.Approve(WithCallInfo(ctx, t.callInfo), c)
}

// MatchTool reports whether name matches one of globs (path.Match syntax;
// a malformed glob matches nothing).
func MatchTool(globs []string, name string) bool {
	for _, g := range globs {
		g = strings.TrimSpace(g)
		if g == name {
			return true
		}
		if ok, err := path.Match(g, name); err == nil && ok {
			return true
		}
	}
	return false
}

// CheckToolGlob reports a malformed tool glob.
func CheckToolGlob(g string) error {
	if strings.TrimSpace(g) == "" {
		return fmt.Errorf("empty tool name")
	}
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("tool glob %q: %w", g, err)
	}
	return nil
}

// ApprovalPolicy decides which tool calls need a person's approval and
// denies those that cannot get it. Its Func is an ApproveFunc.
type ApprovalPolicy struct {
	// Require are the tools (names or globs) whose calls always need approval.
	Require []string
	// Audit, if set, records the decisions made without asking (a job's
	// pre-approved call, a call denied because nobody can approve it).
	Audit func(ctx context.Context, rec memory.AuditRecord)
	Now   func() time.Time
	// Also, if set, is asked about calls that Require and the annotations
	// let through: a non-empty reason means the call needs approval too
	// (exec's exec.approval, which depends on the turn's persona).
	Also func(name string, info CallInfo) string
}

// Needs reports whether a call of the tool name with annotations ann needs
// approval, and why.
func (p ApprovalPolicy) Needs(name string, ann ToolAnnotations) (bool, string) {
	switch {
	case MatchTool(p.Require, name):
		return true, "listed in agent.require_approval"
	case ann.Destructive && !ann.ReadOnly:
		return true, "the tool says it is destructive"
	}
	return false, ""
}

// Func returns the policy as an ApproveFunc.
func (p ApprovalPolicy) Func() ApproveFunc { return p.approve }

func (p ApprovalPolicy) approve(ctx context.Context, call memory.ToolCall) error {
	ai, _ := ctx.Value(approvalKey{}).(approvalInfo)
	if ci, ok := CallInfoFrom(ctx); ok {
		ai.info = ci
	}
	need, why := p.Needs(call.Name, ai.annot)
	if !need && p.Also != nil {
		why = p.Also(call.Name, ai.info)
		need = why != ""
	}
	if !need {
		return nil
	}
	req := ApprovalRequest{Call: call, Annotations: ai.annot, Info: ai.info, Reason: why}
	if ask, ok := ctx.Value(askerKey{}).(Asker); ok && ask != nil {
		return ask(ctx, req)
	}
	actor, where := "system", "turn"
	if ai.info.JobName != "" {
		actor, where = "job:"+ai.info.JobName, "job"
	}
	detail := call.Name + " " + SummarizeArgs(call.Arguments, ApprovalSummaryMax)
	pre, _ := ctx.Value(preapprovedKey{}).([]string)
	if MatchTool(pre, call.Name) {
		p.audit(ctx, memory.AuditRecord{Actor: actor, Action: "approval.preapproved", Session: ai.info.SessionKey,
			Detail: detail})
		return nil
	}
	err := fmt.Errorf("%s needs a person's approval (%s), and nobody can approve it in this %s; it was not run. "+
		"Tell the user it needs approval (a job may list it in its approve list)", call.Name, why, where)
	p.audit(ctx, memory.AuditRecord{Actor: actor, Action: "approval.deny", Session: ai.info.SessionKey,
		Detail: detail, Error: "no one can approve in a " + where})
	return err
}

func (p ApprovalPolicy) audit(ctx context.Context, rec memory.AuditRecord) {
	if p.Audit == nil {
		return
	}
	if p.Now != nil {
		rec.Time = p.Now()
	} else {
		rec.Time = time.Now()
	}
	p.Audit(context.WithoutCancel(ctx), rec)
}
