package daemon

import (
	"context"
	"log/slog"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
)

// Auditor records audit records (memory.Store implements it).
type Auditor interface {
	Audit(ctx context.Context, rec memory.AuditRecord) error
}

// approveFunc is the agent's approval policy (issue 16): tools listed in
// agent.require_approval and MCP tools annotated destructive wait for
// /approve in the chat (the hub's Asker); jobs and heartbeat turns never
// wait, and are denied such calls unless the job's approve list names them.
func approveFunc(cfg *config.Config, deps AgentDeps, log *slog.Logger) agent.ApproveFunc {
	if deps.Approve != nil {
		return deps.Approve
	}
	p := agent.ApprovalPolicy{Require: append([]string(nil), cfg.Agent.RequireApproval...), Also: execApproval(cfg)}
	if deps.Auditor != nil {
		a := deps.Auditor
		p.Audit = func(ctx context.Context, rec memory.AuditRecord) {
			if err := a.Audit(ctx, rec); err != nil {
				log.Error("audit an approval decision", "err", err)
			}
		}
	}
	return p.Func()
}
