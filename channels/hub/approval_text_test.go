package hub

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
	"github.com/switchboard-bot/switchboard/memory"
)

// The approval message shows the arguments as text: markup in them (a code
// fence to break out of the block, bold, links) is not rendered, and the
// summary is bounded.
func TestApprovalTextRendersArgumentsAsText(t *testing.T) {
	args := `{"note":"` + "```" + `\n**pwned** [click](http://evil.example) ` + "````" + strings.Repeat("x", 1000) + `"}`
	req := agent.ApprovalRequest{Call: memory.ToolCall{Name: "files__write_file", Arguments: args}, Reason: "the tool says it is destructive"}
	md := approvalText(req, channels.Message{Direct: true}, DefaultApprovalTimeout)
	plain := markup.Plain(md)
	if !strings.Contains(plain, "**pwned** [click](http://evil.example)") {
		t.Fatalf("the arguments were rendered as markup:\n%s", plain)
	}
	if !strings.Contains(plain, "files__write_file") {
		t.Fatalf("the tool name was mangled:\n%s", plain)
	}
	if n := len([]rune(req.ArgsSummary())); n != agent.ApprovalSummaryMax {
		t.Fatalf("summary has %d characters, want %d", n, agent.ApprovalSummaryMax)
	}
	if strings.Contains(md, strings.Repeat("x", agent.ApprovalSummaryMax)) {
		t.Fatal("the summary is not bounded")
	}
}
