package daemon

import (
	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
)

// UsageMeter is what the agent reports about tokens and budgets (the
// daemon's metrics).
type UsageMeter interface {
	Tokens(models []memory.ModelUsage)
	BudgetRefusal(scope string)
}

// budgetGate is the agent's Gate for llm.budget (nil when no budget is set
// or the store keeps no usage book). The day is bot.timezone's.
func budgetGate(cfg *config.Config, deps AgentDeps) agent.Gate {
	b := cfg.LLM.Budget
	if b.PerChatDailyTokens <= 0 && b.DailyTokens <= 0 {
		return nil
	}
	book, ok := deps.Sessions.(memory.UsageBook)
	if !ok {
		return nil
	}
	o := agent.BudgetOptions{PerChatDaily: int64(b.PerChatDailyTokens), Daily: int64(b.DailyTokens), Admins: b.Admins,
		Book: book, Location: cfg.Bot.Location(), Now: deps.Now}
	if deps.Meter != nil {
		o.OnRefuse = deps.Meter.BudgetRefusal
	}
	return agent.NewBudget(o)
}

// onUsage is the agent's OnUsage hook (nil without a meter).
func onUsage(deps AgentDeps) func([]memory.ModelUsage) {
	if deps.Meter == nil {
		return nil
	}
	return deps.Meter.Tokens
}

// usageSettings are the running config's budgets and prices for /usage.
func (d *Daemon) usageSettings() hub.UsageSettings {
	cfg := d.config()
	b := cfg.LLM.Budget
	prices := make(map[string]hub.Price, len(cfg.LLM.Prices))
	for m, p := range cfg.LLM.Prices {
		prices[m] = hub.Price{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok}
	}
	return hub.UsageSettings{PerChatDaily: int64(b.PerChatDailyTokens), Daily: int64(b.DailyTokens), AdminsLimited: b.Admins,
		Prices: prices, Location: cfg.Bot.Location()}
}
