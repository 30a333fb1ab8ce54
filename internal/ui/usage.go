package ui

import (
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
)

// The Usage page (issue 30): tokens, and money when llm.prices names the
// models, per day (a bar chart with a date axis) and per chat (the top
// chats), per model and per persona, read from the store's usage book, so
// it survives restarts and agrees across replicas. Days are bot.timezone's.

// usageTopChats is how many chats the per-chat table lists.
const usageTopChats = 20

type usageSum struct {
	Name             string
	Prompt, Complete int64
	Money            float64
	Unpriced         bool // some tokens are of a model without a price
}

func (u usageSum) Tokens() int64 { return u.Prompt + u.Complete }

type usageData struct {
	Days      int // the range shown, in days
	From, To  string
	Priced    bool // llm.prices is set: money columns are shown
	Total     usageSum
	Today     usageSum
	Budget    config.Budget
	Chart     template.HTML
	PerDay    []usageSum // oldest first
	Chats     []usageSum // most tokens first, at most usageTopChats
	MoreChats int        // chats not listed
	Models    []usageSum
	Personas  []usageSum
	Jobs      []usageSum
}

func (s *Server) usagePage(w http.ResponseWriter, r *http.Request) {
	days := 30
	if n, err := strconv.Atoi(r.URL.Query().Get("days")); err == nil && n >= 1 && n <= 366 {
		days = n
	}
	cfg := s.o.Backend.Config()
	d, err := usageReport(r, s.o.Backend.Store(), cfg, s.o.Now(), days)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "usage", d)
}

func usageReport(r *http.Request, book memory.UsageBook, cfg *config.Config, now time.Time, days int) (usageData, error) {
	loc := cfg.Bot.Location()
	y, m, dd := now.In(loc).Date()
	dayList := make([]string, days)
	for i := range days {
		dayList[i] = time.Date(y, m, dd-(days-1-i), 12, 0, 0, 0, loc).Format(memory.DayLayout)
	}
	d := usageData{Days: days, From: dayList[0], To: dayList[days-1], Priced: len(cfg.LLM.Prices) > 0, Budget: cfg.LLM.Budget}
	rows, err := book.UsageRows(r.Context(), memory.UsageFilter{From: d.From, To: d.To})
	if err != nil {
		return d, fmt.Errorf("read the usage book: %w", err)
	}
	perDay := map[string]*usageSum{}
	chats, models, personas, jobs := map[string]*usageSum{}, map[string]*usageSum{}, map[string]*usageSum{}, map[string]*usageSum{}
	add := func(set map[string]*usageSum, key string, row memory.UsageRow, money float64, priced bool) {
		u := set[key]
		if u == nil {
			u = &usageSum{Name: key}
			set[key] = u
		}
		u.add(row, money, priced)
	}
	for _, row := range rows {
		price, priced := cfg.LLM.Prices[row.Model]
		money := price.Cost(row.PromptTokens, row.CompletionTokens)
		add(perDay, row.Day, row, money, priced)
		add(chats, row.Chat, row, money, priced)
		add(models, row.Model, row, money, priced)
		add(personas, row.Persona, row, money, priced)
		if row.Job != "" {
			add(jobs, row.Job, row, money, priced)
		}
		d.Total.add(row, money, priced)
	}
	for _, day := range dayList {
		u := usageSum{Name: day}
		if p := perDay[day]; p != nil {
			u = *p
		}
		d.PerDay = append(d.PerDay, u)
	}
	d.Today = d.PerDay[len(d.PerDay)-1]
	d.Chart = dayChart(d.PerDay)
	d.Chats = ranked(chats)
	if len(d.Chats) > usageTopChats {
		d.MoreChats = len(d.Chats) - usageTopChats
		d.Chats = d.Chats[:usageTopChats]
	}
	d.Models, d.Personas, d.Jobs = ranked(models), ranked(personas), ranked(jobs)
	return d, nil
}

func (u *usageSum) add(row memory.UsageRow, money float64, priced bool) {
	u.Prompt += row.PromptTokens
	u.Complete += row.CompletionTokens
	if priced {
		u.Money += money
	} else if row.Total() > 0 {
		u.Unpriced = true
	}
}

// ranked lists set by tokens, most first (ties by name).
func ranked(set map[string]*usageSum) []usageSum {
	out := make([]usageSum, 0, len(set))
	for _, u := range set {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tokens() != out[j].Tokens() {
			return out[i].Tokens() > out[j].Tokens()
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// dayChart renders tokens per day as SVG bars with a date axis (first,
// middle and last day). Presentation attributes only (the CSP allows no
// inline style); nothing but numbers and escaped text.
func dayChart(days []usageSum) template.HTML {
	maxV := 0.0
	for _, u := range days {
		maxV = max(maxV, float64(u.Tokens()))
	}
	top := niceCeil(maxV)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="usage-chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="tokens per day" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH)
	plotW, plotH := chartW-padL-4, chartH-padT-padB
	y := func(v float64) float64 { return padT + plotH - v/top*plotH }
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-width="1"/>`, padL, y(0), chartW-4, y(0))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end" fill="#666">%s</text>`, padL-4, y(top)+4, tokenLabel(top))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end" fill="#666">0</text>`, padL-4, y(0)+4)
	n := len(days)
	step := plotW / float64(max(n, 1))
	for i, u := range days {
		v := float64(u.Tokens())
		if v <= 0 {
			continue
		}
		x := padL + float64(i)*step
		fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#3b7dd8"><title>%s: %s tokens</title></rect>`,
			x, y(v), max(step-1, 0.5), y(0)-y(v), template.HTMLEscapeString(u.Name), tokenLabel(v))
	}
	if n > 0 {
		for _, i := range []int{0, n / 2, n - 1} {
			anchor := "middle"
			switch i {
			case 0:
				anchor = "start"
			case n - 1:
				anchor = "end"
			}
			x := padL + float64(i)*step + step/2
			if i == 0 {
				x = padL
			} else if i == n-1 {
				x = chartW - 4
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="%s" fill="#666">%s</text>`,
				x, chartH-4, anchor, template.HTMLEscapeString(days[i].Name))
			if n == 1 {
				break
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers and escaped text only
}

// tokenLabel is v with thousands separators.
func tokenLabel(v float64) string { return thousands(int64(v)) }

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && c != '-' && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}

// money shows an amount with enough digits for small sums.
func money(x float64) string {
	if x != 0 && x < 0.01 {
		return fmt.Sprintf("%.4f", x)
	}
	return fmt.Sprintf("%.2f", x)
}
