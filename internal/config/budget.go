package config

import (
	"fmt"
	"math"
	"sort"
)

// Budget is llm.budget: tokens per day, counted in bot.timezone and reset
// at its midnight (0 = unlimited). Once a budget is used up (the model
// call that crosses it completes) no further model call is made until it
// resets; each message meanwhile gets a short reply saying so. Jobs and the
// heartbeat count against daily_tokens only. bot.admins are not limited
// unless admins is true.
type Budget struct {
	PerChatDailyTokens int  `yaml:"per_chat_daily_tokens"`
	DailyTokens        int  `yaml:"daily_tokens"`
	Admins             bool `yaml:"admins"`
}

// Price is one model's entry of llm.prices: money per million tokens (in
// the operator's currency), so the console and /usage show cost.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok"`
}

// Cost is the money of prompt and completion tokens at p.
func (p Price) Cost(prompt, completion int64) float64 {
	return (float64(prompt)*p.InputPerMTok + float64(completion)*p.OutputPerMTok) / 1e6
}

// budget checks llm.budget and llm.prices.
func (v *validator) budget() {
	b := v.c.LLM.Budget
	if b.PerChatDailyTokens < 0 {
		v.fail("llm.budget.per_chat_daily_tokens", "must be 0 (unlimited) or more, got %d", b.PerChatDailyTokens)
	}
	if b.DailyTokens < 0 {
		v.fail("llm.budget.daily_tokens", "must be 0 (unlimited) or more, got %d", b.DailyTokens)
	}
	models := make([]string, 0, len(v.c.LLM.Prices))
	for m := range v.c.LLM.Prices {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		p := v.c.LLM.Prices[m]
		key := fmt.Sprintf("llm.prices.%s", m)
		if m == "" {
			v.fail("llm.prices", "a price needs a model name")
		}
		for name, x := range map[string]float64{"input_per_mtok": p.InputPerMTok, "output_per_mtok": p.OutputPerMTok} {
			if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				v.fail(key+"."+name, "must be a price of 0 or more per million tokens, got %v", x)
			}
		}
	}
}
