package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/memory"
)

func TestApprovalPolicyNeeds(t *testing.T) {
	p := ApprovalPolicy{Require: []string{"send_message", "github__delete_*"}}
	for _, tt := range []struct {
		name string
		ann  ToolAnnotations
		want bool
	}{
		{"send_message", ToolAnnotations{}, true},
		{"github__delete_repo", ToolAnnotations{ReadOnly: true}, true}, // listed: a hint cannot exempt it
		{"github__list", ToolAnnotations{}, false},
		{"fs__rm", ToolAnnotations{Destructive: true}, true},
		{"fs__stat", ToolAnnotations{Destructive: true, ReadOnly: true}, false},
		{"memory", ToolAnnotations{}, false},
	} {
		if got, _ := p.Needs(tt.name, tt.ann); got != tt.want {
			t.Errorf("Needs(%s, %+v) = %v, want %v", tt.name, tt.ann, got, tt.want)
		}
	}
}

// The argument summary shown to the approver is one line and bounded.
func TestSummarizeArgsBounded(t *testing.T) {
	long := `{"text": "` + strings.Repeat("é\n", 1000) + `"}`
	s := SummarizeArgs(long, ApprovalSummaryMax)
	if n := utf8.RuneCountInString(s); n != ApprovalSummaryMax || !strings.HasSuffix(s, "…") {
		t.Fatalf("summary has %d characters (want %d, ending with …): %q", n, ApprovalSummaryMax, s)
	}
	if got := SummarizeArgs("{ \"a\" :\n 1 }", 300); got != `{"a":1}` {
		t.Fatalf("summary = %q", got)
	}
	if got := SummarizeArgs("not json\n\tat all", 300); got != "not json at all" {
		t.Fatalf("summary = %q", got)
	}
}

// The policy asks the turn's Asker with the tool's annotations and the
// turn's session; the Asker's refusal is what the model gets as the result.
func TestApprovalPolicyAsksWithAnnotations(t *testing.T) {
	var got ApprovalRequest
	ask := func(_ context.Context, req ApprovalRequest) error {
		got = req
		return errors.New("Ann denied the call of fs__rm, so it was not run")
	}
	p := ApprovalPolicy{}
	tool := &annotatedTool{funcTool: funcTool{name: "fs__rm"}, ann: ToolAnnotations{Destructive: true}}
	tr := &turn{o: Options{Approve: p.Func()}, callInfo: CallInfo{SessionKey: "telegram:1"}}
	err := tr.approve(WithAsker(context.Background(), ask), memory.ToolCall{Name: "fs__rm", Arguments: `{"p":"/"}`}, tool)
	if err == nil || !strings.Contains(err.Error(), "Ann denied") {
		t.Fatalf("err = %v", err)
	}
	if got.Info.SessionKey != "telegram:1" || !got.Annotations.Destructive || got.ArgsSummary() != `{"p":"/"}` {
		t.Fatalf("asked with %+v", got)
	}
	// Without an Asker (a job, heartbeat, `switchboard ask`) it never waits.
	err = tr.approve(context.Background(), memory.ToolCall{Name: "fs__rm"}, tool)
	if err == nil || !strings.Contains(err.Error(), "nobody can approve") {
		t.Fatalf("err = %v", err)
	}
}

type annotatedTool struct {
	funcTool
	ann ToolAnnotations
}

func (a *annotatedTool) Annotations() ToolAnnotations { return a.ann }
