package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// Budgets (issue 30, llm.budget). A Gate is asked before every model call
// of a turn (the loop's steps, the closing answer, the JSON protocol's
// repair round and the history summarizer), with the tokens the turn has
// used so far: the call that crosses a budget completes, the next one is
// not made. A refused chat turn ends with the Gate's short reply as its
// answer (FinishBudget) and is committed like any other, so the message is
// answered and never replayed; a refused ProcessDirect turn (jobs,
// heartbeat, ask) returns the *BudgetError and commits nothing unless a
// model call was already made.

// Gate decides whether a turn may make its next model call. A refusal is
// a *BudgetError; any other error is logged and the call is made (a budget
// never strands a chat because the store could not be read).
type Gate interface {
	Allow(ctx context.Context, c GateCall) error
}

// GateCall describes the turn asking to call the model.
type GateCall struct {
	SessionKey string
	Persona    string
	// Job is the job's name, "heartbeat" for a greeting, "" for a chat turn
	// (and `switchboard ask`).
	Job string
	// Admin says the turn runs for a bot admin (or the operator).
	Admin bool
	// BillTo is the chat the turn's usage counts against when it is not
	// SessionKey (a background task's chat): that chat's per-chat budget
	// applies to it, as to the chat's own turns.
	BillTo string
	// Used is what the turn itself has used so far (not yet in the store).
	Used memory.Usage
}

// BudgetError is a Gate's refusal. Message is the short reply the chat
// gets; Scope says which budget: "chat" or "daily".
type BudgetError struct {
	Scope   string
	Limit   int64
	ResetAt time.Time
	Message string
}

func (e *BudgetError) Error() string { return e.Message }

// IsBudget reports whether err is (or wraps) a budget refusal.
func IsBudget(err error) bool {
	var be *BudgetError
	return errors.As(err, &be)
}

// gateKey carries the GateCall of a turn to the summarizer, which runs in
// the turn but outside its loop (compact.go).
type gateKey struct{}

func withGateCall(ctx context.Context, c GateCall) context.Context {
	return context.WithValue(ctx, gateKey{}, c)
}

// allow asks the Gate about a call outside a turn's loop (the summarizer).
func (a *Agent) allow(ctx context.Context, key string) error {
	if a.o.Gate == nil {
		return nil
	}
	c, ok := ctx.Value(gateKey{}).(GateCall)
	if !ok {
		c = GateCall{SessionKey: key}
	}
	return a.gateErr(ctx, c)
}

// gate asks the Gate whether the turn may make its next model call.
func (t *turn) gate(ctx context.Context) error {
	if t.o.Gate == nil {
		return nil
	}
	return t.a.gateErr(ctx, t.gateCall())
}

func (t *turn) gateCall() GateCall {
	return GateCall{SessionKey: t.req.SessionKey, Persona: t.persona.Name, Job: t.job(), Admin: t.req.Admin, Used: t.usage,
		BillTo: t.req.BillTo}
}

func (a *Agent) gateErr(ctx context.Context, c GateCall) error {
	err := a.o.Gate.Allow(ctx, c)
	if err == nil || IsBudget(err) {
		return err
	}
	a.log.Warn("the budget could not be checked; the model call is made", slog.String("session", c.SessionKey),
		slog.String("error", err.Error()))
	return nil
}

// job is the turn's job as the usage book records it.
func (t *turn) job() string {
	switch {
	case t.callInfo.JobName != "":
		return t.callInfo.JobName
	case t.req.Runtime.ChatType == "heartbeat":
		return "heartbeat"
	}
	return ""
}

// refused ends the turn with the Gate's reply as its answer.
func (t *turn) refused(be *BudgetError) (string, FinishReason, error) {
	t.refusal = be
	t.a.log.Info("model call refused by the budget", slog.String("session", t.req.SessionKey),
		slog.String("turn", t.id), slog.String("scope", be.Scope))
	t.resetText()
	t.emitText(be.Message)
	t.msgs = append(t.msgs, memory.Message{Role: memory.RoleAssistant, Content: be.Message, Time: t.now()})
	return be.Message, FinishBudget, nil
}

// recordTurn completes the committed record: persona, job, the day its
// tokens count toward, and its usage per model (one entry under the model
// asked for when the calls did not say which model answered).
func (t *turn) recordTurn(turn *memory.Turn) {
	turn.Persona = t.persona.Name
	turn.Job = t.job()
	turn.BillTo = t.req.BillTo
	turn.Day = memory.DayOf(turn.Ended, t.o.Location)
	if len(turn.Models) == 0 {
		turn.Models = t.usageByModel()
	}
}

// usageByModel is the turn's usage per model: what the calls reported, or
// all of it under the model the turn asked for when they did not say.
func (t *turn) usageByModel() []memory.ModelUsage {
	if len(t.models) > 0 || t.usage == (memory.Usage{}) {
		return t.models
	}
	return []memory.ModelUsage{{Model: t.chatRequest(nil).Model, Usage: t.usage}}
}

// reportUsage tells Options.OnUsage what the turn used (metrics).
func (t *turn) reportUsage() {
	if t.o.OnUsage == nil || t.usage == (memory.Usage{}) {
		return
	}
	t.o.OnUsage(t.usageByModel())
}

// skipRefusedCommit says a refused direct turn made no model call: there
// is nothing to keep (the caller records the refusal).
func (t *turn) skipRefusedCommit() bool {
	return t.refusal != nil && t.req.direct && t.usage == (memory.Usage{}) && !t.ranTools
}

// BudgetOptions configure NewBudget (llm.budget).
type BudgetOptions struct {
	PerChatDaily int64 // tokens a chat may use per day; 0 = unlimited
	Daily        int64 // tokens all turns (jobs, heartbeat) may use per day; 0 = unlimited
	// Admins limits bot admins (and the operator's `switchboard ask`) too;
	// by default they are not limited.
	Admins   bool
	Book     memory.UsageBook
	Location *time.Location   // the day's zone (bot.timezone); nil = UTC
	Now      func() time.Time // nil = time.Now
	// OnRefuse, when set, is told every refusal's scope (metrics).
	OnRefuse func(scope string)
}

// Budget is the Gate of llm.budget: a chat's and the whole bot's tokens
// per day, read from the usage book (one lookup each) plus what the asking
// turn has used so far; the daily budget also counts what the other turns
// running in this process have used and not yet committed, so chats
// running at the same moment cannot each spend it. The day is the
// calendar day in Location; the budget resets at its midnight.
type Budget struct {
	o BudgetOptions

	mu      sync.Mutex
	running map[string]int64 // session key → tokens its running turn used (not yet in the book)
}

// NewBudget returns the Gate for o.
func NewBudget(o BudgetOptions) *Budget {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	return &Budget{o: o, running: map[string]int64{}}
}

// turnEnder is a Gate told when a session's turn ended, after its commit.
type turnEnder interface{ TurnEnded(sessionKey string) }

// TurnEnded forgets what the session's running turn used: it is in the
// usage book now (or was never committed).
func (b *Budget) TurnEnded(sessionKey string) {
	b.mu.Lock()
	delete(b.running, sessionKey)
	b.mu.Unlock()
}

// others records own as the running usage of key and returns what the
// other running turns used.
func (b *Budget) others(key string, own int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if own > 0 {
		b.running[key] = own
	} else {
		delete(b.running, key)
	}
	var n int64
	for k, v := range b.running {
		if k != key {
			n += v
		}
	}
	return n
}

// Allow implements Gate.
func (b *Budget) Allow(ctx context.Context, c GateCall) error {
	if b == nil || b.o.Book == nil || (b.o.PerChatDaily <= 0 && b.o.Daily <= 0) {
		return nil
	}
	own := tokens(c.Used)
	var others int64
	if b.o.Daily > 0 {
		others = b.others(c.SessionKey, own)
	}
	if c.Admin && !b.o.Admins {
		return nil
	}
	now := b.o.Now()
	day := memory.DayOf(now, b.o.Location)
	if chat := cmp.Or(c.BillTo, c.SessionKey); b.o.PerChatDaily > 0 && (c.Job == "" || c.BillTo != "") {
		u, err := b.o.Book.UsageOn(ctx, day, chat)
		if err != nil {
			return fmt.Errorf("read the usage of %s: %w", chat, err)
		}
		if tokens(u)+own >= b.o.PerChatDaily {
			return b.refuse("chat", b.o.PerChatDaily, now)
		}
	}
	if b.o.Daily > 0 {
		u, err := b.o.Book.UsageOn(ctx, day, "")
		if err != nil {
			return fmt.Errorf("read today's usage: %w", err)
		}
		if tokens(u)+own+others >= b.o.Daily {
			return b.refuse("daily", b.o.Daily, now)
		}
	}
	return nil
}

// Limits returns the per-chat and daily budgets (0 = unlimited).
func (b *Budget) Limits() (perChat, daily int64) { return b.o.PerChatDaily, b.o.Daily }

// ResetAt is the next midnight after now in the budget's zone.
func (b *Budget) ResetAt(now time.Time) time.Time { return NextMidnight(now, b.o.Location) }

func (b *Budget) refuse(scope string, limit int64, now time.Time) *BudgetError {
	if b.o.OnRefuse != nil {
		b.o.OnRefuse(scope)
	}
	reset := NextMidnight(now, b.o.Location)
	when := fmt.Sprintf("I can answer again at %s (in %s).", ClockIn(reset, b.o.Location), Until(reset.Sub(now)))
	msg := fmt.Sprintf("This chat has used its %s tokens for today; %s", Thousands(limit), when)
	if scope == "daily" {
		msg = fmt.Sprintf("Today's budget of %s tokens is used up; %s", Thousands(limit), when)
	}
	return &BudgetError{Scope: scope, Limit: limit, ResetAt: reset, Message: msg}
}

// tokens is a usage's prompt and completion tokens (the total when an
// endpoint reported only that).
func tokens(u memory.Usage) int64 {
	if n := int64(u.PromptTokens) + int64(u.CompletionTokens); n > 0 {
		return n
	}
	return int64(u.TotalTokens)
}

// NextMidnight is the start of the day after now's in loc.
func NextMidnight(now time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := now.In(loc).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
}

// ClockIn is t as "00:00 Europe/Berlin" (the zone's abbreviation when loc
// has no IANA name).
func ClockIn(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	name := loc.String()
	if name == "" || name == "Local" {
		name = t.Format("MST")
	}
	return t.Format("15:04") + " " + name
}

// Until is d as "3 h 12 min" (minutes rounded up; "1 min" at least).
func Until(d time.Duration) string {
	mins := int64((d + time.Minute - 1) / time.Minute)
	if mins < 1 {
		mins = 1
	}
	h, m := mins/60, mins%60
	switch {
	case h == 0:
		return strconv.FormatInt(m, 10) + " min"
	case m == 0:
		return strconv.FormatInt(h, 10) + " h"
	}
	return strconv.FormatInt(h, 10) + " h " + strconv.FormatInt(m, 10) + " min"
}

// Thousands is n with comma separators: 50000 → "50,000".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
