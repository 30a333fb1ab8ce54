package memory

import (
	"cmp"
	"context"
	"time"
)

// The usage book (issue 30): tokens per day, chat, persona, job and model.
//
// Every store keeps it in the turn's own commit: AppendTurn and CommitTurn
// add the turn's tokens (Turn.Models, or Turn.Usage under model "" when a
// turn carries no split) to the rows of Turn.Day, so the book never
// disagrees with the turns on disk and replicas sharing one database share
// one count. Reading a day's total, or one chat's, is one lookup: the budget
// gate reads it before every model call.

// UsageRow is the tokens of one (day, chat, persona, job, model).
type UsageRow struct {
	Day              string `json:"day"`               // YYYY-MM-DD in the bot's timezone
	Chat             string `json:"chat"`              // the session key
	Persona          string `json:"persona,omitempty"` // the persona that answered
	Job              string `json:"job,omitempty"`     // the job's name, "heartbeat", or "" for a chat turn
	Model            string `json:"model,omitempty"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

// Total is the row's prompt and completion tokens together.
func (r UsageRow) Total() int64 { return r.PromptTokens + r.CompletionTokens }

// UsageFilter selects usage rows; zero fields do not filter. From and To are
// days (YYYY-MM-DD), both inclusive.
type UsageFilter struct {
	From string
	To   string
	Chat string
}

// UsageBook reads the usage book.
type UsageBook interface {
	// UsageOn returns the tokens of day (YYYY-MM-DD); of every chat when
	// chat is "", else of that session key. Cheap: one lookup.
	UsageOn(ctx context.Context, day, chat string) (Usage, error)
	// UsageRows returns the rows f selects, ordered by day, chat, persona,
	// job and model.
	UsageRows(ctx context.Context, f UsageFilter) ([]UsageRow, error)
}

// DayLayout is the form of UsageRow.Day and Turn.Day.
const DayLayout = "2006-01-02"

// DayOf is the day t falls on in loc (UTC when loc is nil).
func DayOf(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(DayLayout)
}

// UsageRowsOf returns what turn adds to the usage book of session key: one
// row per model entry (tokens of the same model summed), none when it used no
// tokens. now dates a turn with neither Day nor Ended.
func UsageRowsOf(key string, turn Turn, now time.Time) []UsageRow {
	day := turn.Day
	if day == "" {
		t := turn.Ended
		if t.IsZero() {
			t = now
		}
		day = DayOf(t, time.UTC)
	}
	models := turn.Models
	if len(models) == 0 {
		models = []ModelUsage{{Usage: turn.Usage}}
	}
	var out []UsageRow
	for _, m := range models {
		p, c := int64(m.Usage.PromptTokens), int64(m.Usage.CompletionTokens)
		if p == 0 && c == 0 {
			continue
		}
		merged := false
		for i := range out {
			if out[i].Model == m.Model {
				out[i].PromptTokens += p
				out[i].CompletionTokens += c
				merged = true
			}
		}
		if !merged {
			out = append(out, UsageRow{Day: day, Chat: cmp.Or(turn.BillTo, key), Persona: turn.Persona, Job: turn.Job, Model: m.Model,
				PromptTokens: p, CompletionTokens: c})
		}
	}
	return out
}
