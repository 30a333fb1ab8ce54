package ui

import (
	"context"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// The overview's charts from the store (issue 34): after a restart the hour
// and day charts still show the turns the store holds (Stats.Backfill, read
// once, the first time the overview is shown: the sessions updated in the
// last day and their turns), and tokens per day over the last two weeks come
// from the usage book, so they agree across restarts and replicas. The
// usage book is read at most once a minute (the overview refreshes every
// few seconds).

// historyDays is how many days the tokens-per-day chart shows.
const historyDays = 14

// historyTTL is how long a read of the usage book is shown before the next.
const historyTTL = time.Minute

// backfillTimeout bounds the one read of the last day's turns.
const backfillTimeout = 15 * time.Second

// dayHistory caches the tokens-per-day chart.
type dayHistory struct {
	mu    sync.Mutex
	at    time.Time
	chart template.HTML
}

// backfill gives the charts the turns of the last day from before this
// process; an error is logged, and tried again at the next overview.
func (s *Server) backfill(ctx context.Context) {
	st := s.o.Backend.Store()
	err := s.o.Stats.Backfill(func(since time.Time) ([]memory.Turn, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backfillTimeout)
		defer cancel()
		sessions, err := st.ListSessions(ctx)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		var out []memory.Turn
		for _, m := range sessions {
			if m.Updated.Before(since) {
				continue
			}
			turns, err := st.SessionTurns(ctx, m.Key)
			if err != nil {
				return nil, fmt.Errorf("read the turns of %s: %w", m.Key, err)
			}
			for _, t := range turns {
				if !t.Ended.Before(since) {
					out = append(out, t)
				}
			}
		}
		return out, nil
	})
	if err != nil {
		s.log.Warn("the overview's charts show this process's turns only", "err", err)
	}
}

// daysChart is the tokens-per-day chart of the last historyDays days, from
// the usage book (cached for historyTTL).
func (s *Server) daysChart(ctx context.Context) template.HTML {
	h := &s.days
	h.mu.Lock()
	defer h.mu.Unlock()
	now := s.o.Now()
	if h.chart != "" && now.Sub(h.at) < historyTTL && !now.Before(h.at) {
		return h.chart
	}
	loc := s.o.Backend.Config().Bot.Location()
	y, m, d := now.In(loc).Date()
	days := make([]dayTokens, historyDays)
	for i := range days {
		days[i].Day = time.Date(y, m, d-(historyDays-1-i), 12, 0, 0, 0, loc).Format(memory.DayLayout)
	}
	rows, err := s.o.Backend.Store().UsageRows(ctx, memory.UsageFilter{From: days[0].Day, To: days[historyDays-1].Day})
	if err != nil {
		s.log.Warn("read the usage book for the overview", "err", err)
		return template.HTML(`<p class="muted" id="chart-days">Tokens per day are unavailable: the store did not answer.</p>`)
	}
	byDay := map[string]int{}
	for i := range days {
		byDay[days[i].Day] = i
	}
	chats := make([]map[string]int64, historyDays)
	for _, r := range rows {
		i, ok := byDay[r.Day]
		if !ok {
			continue
		}
		days[i].Tokens += r.Total()
		if chats[i] == nil {
			chats[i] = map[string]int64{}
		}
		chats[i][r.Chat] += r.Total()
	}
	for i, c := range chats {
		days[i].Top = topChat(c)
	}
	h.chart, h.at = tokenDaysChart(days), now
	return h.chart
}

// dayTokens is one bar of the tokens-per-day chart.
type dayTokens struct {
	Day    string
	Tokens int64
	Top    string // the chat that used the most tokens that day
}

// topChat is the key with the most tokens (ties: the first by name).
func topChat(c map[string]int64) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	top := ""
	for _, k := range keys {
		if top == "" || c[k] > c[top] {
			top = k
		}
	}
	return top
}

// tokenDaysChart draws tokens per day as SVG bars with a date under the
// first, middle and last day; each bar's title names the day, its tokens
// and the chat that used the most. Numbers and escaped text only.
func tokenDaysChart(days []dayTokens) template.HTML {
	maxV := 0.0
	for _, d := range days {
		maxV = max(maxV, float64(d.Tokens))
	}
	top := niceCeil(maxV)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="chart-days" viewBox="0 0 %.0f %.0f" role="img" aria-label="tokens per day, last %d days" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, len(days))
	plotW, plotH := chartW-padL-4, chartH-padT-padB
	y := func(v float64) float64 { return padT + plotH - v/top*plotH }
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-width="1"/>`, padL, y(0), chartW-4, y(0))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end" fill="#666">%s</text>`, padL-4, y(top)+4, tokenLabel(top))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end" fill="#666">0</text>`, padL-4, y(0)+4)
	n := len(days)
	step := plotW / float64(max(n, 1))
	for i, d := range days {
		v := float64(d.Tokens)
		if v <= 0 {
			continue
		}
		title := d.Day + ": " + tokenLabel(v) + " tokens"
		if d.Top != "" {
			title += ", most by " + d.Top
		}
		fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#3b7dd8"><title>%s</title></rect>`,
			padL+float64(i)*step, y(v), max(step-1, 0.5), y(0)-y(v), template.HTMLEscapeString(title))
	}
	for j, i := range []int{0, n / 2, n - 1} {
		if n == 0 || (j == 1 && (i == 0 || i == n-1)) || (j == 2 && n == 1) {
			continue
		}
		x, anchor := padL+float64(i)*step+step/2, "middle"
		switch j {
		case 0:
			x, anchor = padL, "start"
		case 2:
			x, anchor = chartW-4, "end"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="%s" fill="#666">%s</text>`,
			x, chartH-4, anchor, template.HTMLEscapeString(days[i].Day))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers and escaped text only
}
