package hub

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// /usage (issue 30): a chat's tokens today and over the last 7 days, the
// budgets with what is left and when they reset, and money when prices are
// set. The numbers come from the store's usage book, so they are the same
// on every replica and survive restarts.

// UsageSettings are what /usage shows beside the usage book: the budgets
// (0 = unlimited), prices by model, and the zone whose days count.
type UsageSettings struct {
	PerChatDaily int64
	Daily        int64
	// AdminsLimited says llm.budget limits admins too.
	AdminsLimited bool
	Prices        map[string]Price
	Location      *time.Location
}

// Price is money per million tokens of one model.
type Price struct{ InputPerMTok, OutputPerMTok float64 }

func (p Price) cost(prompt, completion int64) float64 {
	return (float64(prompt)*p.InputPerMTok + float64(completion)*p.OutputPerMTok) / 1e6
}

// usageCommand answers /usage for the chat key.
func (h *Handler) usageCommand(ctx context.Context, it item, key string, admin bool) {
	book, ok := h.store.(memory.UsageBook)
	if !ok {
		h.reply(it, "Usage is not recorded here.")
		return
	}
	set := UsageSettings{Location: time.UTC}
	if h.usage != nil {
		set = h.usage()
	}
	if set.Location == nil {
		set.Location = time.UTC
	}
	text, err := usageText(ctx, book, set, key, admin, h.now())
	if err != nil {
		h.log.Error("read usage", "session", key, "err", err)
		h.reply(it, "Sorry, I could not read the usage. The operator can find the cause in the log.")
		return
	}
	h.reply(it, text)
}

// usageText renders /usage for chat key at now.
func usageText(ctx context.Context, book memory.UsageBook, set UsageSettings, key string, admin bool, now time.Time) (string, error) {
	loc := set.Location
	today := memory.DayOf(now, loc)
	y, m, d := now.In(loc).Date()
	from := time.Date(y, m, d-6, 12, 0, 0, 0, loc).Format(memory.DayLayout)
	rows, err := book.UsageRows(ctx, memory.UsageFilter{From: from, To: today, Chat: key})
	if err != nil {
		return "", err
	}
	type sum struct {
		p, c     int64
		money    float64
		unpriced bool
	}
	byDay := map[string]*sum{}
	var week sum
	for _, r := range rows {
		s := byDay[r.Day]
		if s == nil {
			s = &sum{}
			byDay[r.Day] = s
		}
		price, priced := set.Prices[r.Model]
		for _, x := range []*sum{s, &week} {
			x.p += r.PromptTokens
			x.c += r.CompletionTokens
			if priced {
				x.money += price.cost(r.PromptTokens, r.CompletionTokens)
			} else if r.Total() > 0 {
				x.unpriced = true
			}
		}
	}
	money := func(s *sum) string {
		if len(set.Prices) == 0 {
			return ""
		}
		out := fmt.Sprintf(" · %s", formatMoney(s.money))
		if s.unpriced {
			out += " (some models have no price)"
		}
		return out
	}
	var b strings.Builder
	t := byDay[today]
	if t == nil {
		t = &sum{}
	}
	fmt.Fprintf(&b, "Usage of this chat today: %s tokens (%s in, %s out)%s\n",
		agent.Thousands(t.p+t.c), agent.Thousands(t.p), agent.Thousands(t.c), money(t))
	reset := agent.NextMidnight(now, loc)
	switch {
	case set.PerChatDaily <= 0 && set.Daily <= 0:
		b.WriteString("Budget: none (unlimited).\n")
	case admin && !set.AdminsLimited:
		b.WriteString("Budget: you are an admin and not limited.\n")
	default:
		var parts []string
		if set.PerChatDaily > 0 {
			parts = append(parts, fmt.Sprintf("%s tokens a day for this chat, %s left", agent.Thousands(set.PerChatDaily),
				agent.Thousands(max(0, set.PerChatDaily-(t.p+t.c)))))
		}
		if set.Daily > 0 {
			all, err := book.UsageOn(ctx, today, "")
			if err != nil {
				return "", err
			}
			parts = append(parts, fmt.Sprintf("%s tokens a day for everyone, %s left", agent.Thousands(set.Daily),
				agent.Thousands(max(0, set.Daily-int64(all.PromptTokens+all.CompletionTokens)))))
		}
		fmt.Fprintf(&b, "Budget: %s. It resets at %s (in %s).\n", strings.Join(parts, "; "),
			agent.ClockIn(reset, loc), agent.Until(reset.Sub(now)))
	}
	fmt.Fprintf(&b, "Last 7 days: %s tokens%s", agent.Thousands(week.p+week.c), money(&week))
	days := make([]string, 0, len(byDay))
	for day := range byDay {
		days = append(days, day)
	}
	sort.Strings(days)
	for _, day := range days {
		s := byDay[day]
		fmt.Fprintf(&b, "\n%s: %s%s", day, agent.Thousands(s.p+s.c), money(s))
	}
	return b.String(), nil
}

// formatMoney shows an amount with enough digits for small sums.
func formatMoney(x float64) string {
	if x != 0 && x < 0.01 {
		return fmt.Sprintf("%.4f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// allAdmins says every sender of the batch is a bot admin (a turn answers
// them all; one non-admin makes it a limited turn).
func (h *Handler) allAdmins(batch []item) bool {
	pol := h.Access()
	for i := range batch {
		if !pol.IsAdmin(&batch[i].msg) {
			return false
		}
	}
	return len(batch) > 0
}
