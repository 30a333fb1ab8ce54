package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
	"github.com/switchboard-bot/switchboard/memory"
)

// KV keys of the heartbeat.
const (
	kvEnabled  = "heartbeat/enabled"
	kvDayState = "heartbeat/day/" // + target
)

// Decision actions reported by Tick.
const (
	ActionGreeted  = "greeted"  // delivered and saved; the slot is used
	ActionDeclined = "declined" // the model chose to skip; the slot is used
	ActionFailed   = "failed"   // model or delivery failed; the slot stays due (refused for good: used)
	ActionWaiting  = "waiting"  // not eligible now (Reason says why)
)

// Decision is what one tick decided for one target.
type Decision struct {
	Target  string
	Action  string
	Reason  string
	Message string // the greeting sent (ActionGreeted)
}

// DayPlan is a target's greeting plan for the active window containing (or
// following) a moment.
type DayPlan struct {
	Target string
	// Day is the local date ("2006-01-02") on which the window opens.
	Day         string
	WindowStart time.Time
	WindowEnd   time.Time
	// InWindow reports whether the moment lies in the window.
	InWindow bool
	// Slots are the greeting times of the day, in order.
	Slots []time.Time
}

// dayState is the persisted per-target state of one day.
type dayState struct {
	Day      string      `json:"day"`
	Used     int         `json:"used"` // slots consumed: greetings sent + declines
	Sent     []time.Time `json:"sent,omitempty"`
	Declined int         `json:"declined,omitempty"`
	// Retries counts lost claims and failed deliveries of the current
	// slot, with replicas (claim.go); reset when a slot is used.
	Retries int `json:"retries,omitempty"`
}

// Heartbeat decides and sends proactive greetings. Safe for concurrent use;
// ticks are serialized.
type Heartbeat struct {
	o   Options
	log *slog.Logger

	mu          sync.Mutex // guards cfg, start, end, always, sched
	cfg         Config
	start, end  int
	always      bool
	sched       cronSchedule // heartbeat.schedule; nil if empty
	tickMu      sync.Mutex
	locationFor func(string) *time.Location
}

// NewHeartbeat returns a Heartbeat for o.Heartbeat.
func NewHeartbeat(o Options) (*Heartbeat, error) {
	if o.Store == nil {
		return nil, errors.New("heartbeat: no store")
	}
	o = o.withDefaults()
	h := &Heartbeat{o: o, log: o.Logger.With(slog.String("component", "heartbeat"))}
	h.locationFor = o.targetLocation
	if err := h.SetConfig(o.Heartbeat); err != nil {
		return nil, err
	}
	return h, nil
}

// SetConfig replaces the heartbeat configuration (config reload). The
// schedule is applied by the Scheduler.
func (h *Heartbeat) SetConfig(c Config) error {
	var start, end int
	always := c.ActiveHours == ""
	if !always {
		var err error
		if start, end, err = schedule.ParseActiveHours(c.ActiveHours); err != nil {
			return fmt.Errorf("heartbeat: active_hours: %w", err)
		}
	}
	if c.MaxPerDay <= 0 {
		c.MaxPerDay = 1
	}
	var sched cronSchedule
	if c.Schedule != "" {
		var err error
		if sched, err = schedule.Parse(c.Schedule, h.o.Location); err != nil {
			return fmt.Errorf("heartbeat: schedule: %w", err)
		}
	}
	h.mu.Lock()
	h.cfg, h.start, h.end, h.always, h.sched = c, start, end, always, sched
	h.mu.Unlock()
	return nil
}

func (h *Heartbeat) schedule() cronSchedule {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sched
}

func (h *Heartbeat) config() (Config, int, int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg, h.start, h.end, h.always
}

// Enabled reports whether greetings are on: the persisted /heartbeat switch
// if it was ever used, else heartbeat.enabled.
func (h *Heartbeat) Enabled(ctx context.Context) bool {
	cfg, _, _, _ := h.config()
	v, found, err := h.o.Store.KVGet(ctx, kvEnabled)
	if err != nil {
		h.log.Warn("read the heartbeat switch; using the configured value", slog.String("error", err.Error()))
		return cfg.Enabled
	}
	if !found {
		return cfg.Enabled
	}
	return string(v) == "on"
}

// SetEnabled persists the /heartbeat on|off switch, which overrides
// heartbeat.enabled from then on.
func (h *Heartbeat) SetEnabled(ctx context.Context, on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	if err := h.o.Store.KVPut(ctx, kvEnabled, []byte(v)); err != nil {
		return fmt.Errorf("heartbeat: set %s: %w", v, err)
	}
	h.log.Info("heartbeat switched", slog.String("state", v))
	return nil
}

// Plan returns target's greeting plan for the window containing now, or the
// next window when now is outside active hours.
func (h *Heartbeat) Plan(target string, now time.Time) DayPlan {
	cfg, start, end, always := h.config()
	loc := h.locationFor(target)
	local := now.In(loc)
	y, m, d := local.Date()
	minute := local.Hour()*60 + local.Minute()
	wall := func(day, min int) time.Time { return time.Date(y, m, d+day, min/60, min%60, 0, 0, loc) }

	var openDay int // offset in days of the window's opening date
	var in bool
	endDay := 0
	switch {
	case always:
		start, end, in, endDay = 0, 0, true, 1
	case start < end:
		in = schedule.InActiveHours(start, end, minute)
		if minute >= end {
			openDay = 1
		}
	default: // crosses midnight
		endDay = 1
		in = schedule.InActiveHours(start, end, minute)
		if minute < end {
			openDay = -1
		}
	}
	ws, we := wall(openDay, start), wall(openDay+endDay, end)
	p := DayPlan{Target: target, Day: ws.Format("2006-01-02"), WindowStart: ws, WindowEnd: we, InWindow: in}
	n := cfg.MaxPerDay
	seg := we.Sub(ws) / time.Duration(n)
	sched := h.schedule()
	for i := range n {
		off := time.Duration(slotFraction(p.Day, target, i) * float64(seg))
		p.Slots = append(p.Slots, alignToTick(sched, ws.Add(seg*time.Duration(i)+off).Truncate(time.Second), ws, we))
	}
	return p
}

// alignToTick moves a slot to the first heartbeat tick at or after it, so
// every slot is reachable by a tick inside the window; a slot after the last
// tick of the window moves back to that tick. Without ticks in the window
// (or a schedule) the slot stays.
func alignToTick(sched cronSchedule, slot, ws, we time.Time) time.Time {
	if sched == nil {
		return slot
	}
	if t := sched.Next(slot.Add(-time.Second)); !t.IsZero() && t.Before(we) {
		return t
	}
	var last time.Time
	for t, i := sched.Next(ws.Add(-time.Second)), 0; !t.IsZero() && t.Before(we) && i < 100000; t, i = sched.Next(t), i+1 {
		last = t
	}
	if last.IsZero() {
		return slot
	}
	return last
}

// slotFraction is a stable pseudo-random number in [0, 1) for one slot.
func slotFraction(day, target string, i int) float64 {
	f := fnv.New64a()
	fmt.Fprintf(f, "%s|%s|%d", day, target, i)
	return float64(f.Sum64()>>11) / float64(uint64(1)<<53)
}

type candidate struct {
	key  string
	meta memory.SessionMeta
}

// targets lists the chats to consider.
func (h *Heartbeat) targets(ctx context.Context, now time.Time) ([]candidate, error) {
	cfg, _, _, _ := h.config()
	var out []candidate
	if len(cfg.Targets) > 0 {
		for _, key := range cfg.Targets {
			meta, _, err := h.o.Store.Session(ctx, key)
			if err != nil {
				return nil, fmt.Errorf("heartbeat: read session %s: %w", key, err)
			}
			out = append(out, candidate{key: key, meta: meta})
		}
		return out, nil
	}
	metas, err := h.o.Store.ListSessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("heartbeat: list sessions: %w", err)
	}
	for _, m := range metas {
		if m.LastUserMessage.IsZero() || now.Sub(m.LastUserMessage) > RecentWindow || !h.o.IsDirectAllowed(m.Key) {
			continue
		}
		out = append(out, candidate{key: m.Key, meta: m})
	}
	return out, nil
}

func (h *Heartbeat) loadState(ctx context.Context, target, day string) (dayState, error) {
	v, found, err := h.o.Store.KVGet(ctx, kvDayState+target)
	if err != nil {
		return dayState{}, fmt.Errorf("heartbeat: read state of %s: %w", target, err)
	}
	var st dayState
	if found {
		if err := json.Unmarshal(v, &st); err != nil {
			h.log.Warn("heartbeat state unreadable; starting the day afresh", slog.String("target", target), slog.String("error", err.Error()))
			st = dayState{}
		}
	}
	if st.Day != day {
		st = dayState{Day: day}
	}
	return st, nil
}

func (h *Heartbeat) saveState(ctx context.Context, target string, st dayState) error {
	v, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := h.o.Store.KVPut(ctx, kvDayState+target, v); err != nil {
		return fmt.Errorf("heartbeat: save state of %s: %w", target, err)
	}
	return nil
}

// eligible decides whether c may be greeted at now (no side effects).
func (h *Heartbeat) eligible(ctx context.Context, c candidate, now time.Time) (DayPlan, dayState, string, error) {
	cfg, _, _, _ := h.config()
	p := h.Plan(c.key, now)
	if !p.InWindow {
		return p, dayState{}, fmt.Sprintf("outside active hours %s (%s)", cfg.ActiveHours, p.WindowStart.Location()), nil
	}
	st, err := h.loadState(ctx, c.key, p.Day)
	if err != nil {
		return p, st, "", err
	}
	if st.Used >= len(p.Slots) {
		return p, st, fmt.Sprintf("all %d greeting slots of %s are used", len(p.Slots), p.Day), nil
	}
	due := 0
	for _, s := range p.Slots {
		if !s.After(now) {
			due++
		}
	}
	if st.Used >= due {
		return p, st, "next greeting slot at " + p.Slots[st.Used].Format("15:04 MST"), nil
	}
	if last := c.meta.LastUserMessage; !last.IsZero() && now.Sub(last) < cfg.IdleAfter {
		return p, st, fmt.Sprintf("the user wrote %s ago (idle_after %s)", humanDuration(now.Sub(last)), cfg.IdleAfter), nil
	}
	if h.o.Busy != nil && h.o.Busy.Busy(c.key) {
		return p, st, "a turn is running in this chat", nil
	}
	return p, st, "", nil
}

// Tick greets every eligible target at now and reports a decision per
// target. Nothing happens (and no model is called) when the heartbeat is off
// or no target is eligible.
func (h *Heartbeat) Tick(ctx context.Context, now time.Time) ([]Decision, error) {
	h.tickMu.Lock()
	defer h.tickMu.Unlock()
	if !h.Enabled(ctx) {
		return nil, nil
	}
	cands, err := h.targets(ctx, now)
	if err != nil {
		return nil, err
	}
	var out []Decision
	var errs []error
	for _, c := range cands {
		p, st, why, err := h.eligible(ctx, c, now)
		if err != nil {
			errs = append(errs, err)
			out = append(out, Decision{Target: c.key, Action: ActionFailed, Reason: err.Error()})
			continue
		}
		if why != "" {
			h.log.Debug("no greeting", slog.String("target", c.key), slog.String("reason", why))
			out = append(out, Decision{Target: c.key, Action: ActionWaiting, Reason: why})
			continue
		}
		d, err := h.greet(ctx, c, p, st, now)
		if err != nil {
			errs = append(errs, err)
		}
		if h.o.OnRun != nil {
			h.o.OnRun("heartbeat", d.Action)
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

// askGreeting asks the model for c's greeting, with the chat's history,
// notes and persona hints in the instruction.
func (h *Heartbeat) askGreeting(ctx context.Context, log *slog.Logger, c candidate, p DayPlan, channel string, now time.Time) (string, error) {
	persona := c.meta.Persona
	if persona == "" {
		persona = h.o.PersonaFor(c.key)
	}
	hist, err := h.o.Store.LoadHistory(ctx, c.key, 2*maxHistoryInInstruction)
	if err != nil {
		log.Warn("load history for the greeting", slog.String("error", err.Error()))
	}
	notes, err := h.o.Store.ListNotes(ctx, c.key)
	if err != nil {
		log.Warn("load notes for the greeting", slog.String("error", err.Error()))
	}
	name := ""
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Role == memory.RoleUser && hist[i].Name != "" {
			name = hist[i].Name
			break
		}
	}
	instr := buildInstruction(greetingInput{
		Target: c.key, UserName: name, Now: now.In(p.WindowStart.Location()), LastUser: c.meta.LastUserMessage,
		Hints: h.o.GreetingHints(persona), Notes: notes, History: hist,
	})
	return h.o.Agent.ProcessDirect(ctx, "heartbeat:"+c.key, instr, agent.DirectOptions{
		Persona: persona, NoTools: true,
		Runtime: agent.Runtime{Channel: channel, ChatType: "heartbeat", SenderName: name},
	})
}

// greet asks the model for a greeting and delivers it.
func (h *Heartbeat) greet(ctx context.Context, c candidate, p DayPlan, st dayState, now time.Time) (Decision, error) {
	log := h.log.With(slog.String("target", c.key), slog.String("day", p.Day))
	fail := func(reason string, err error) (Decision, error) {
		log.Warn("greeting failed; the slot stays due", slog.String("reason", reason), slog.String("error", err.Error()))
		return Decision{Target: c.key, Action: ActionFailed, Reason: reason + ": " + err.Error()}, fmt.Errorf("heartbeat: %s: %s: %w", c.key, reason, err)
	}
	tgt, ok := channels.ParseTarget(c.key)
	if !ok {
		return fail("not a target address", errors.New("cannot deliver to "+c.key))
	}
	if h.o.Agent == nil {
		return fail("model call", errors.New("no agent configured"))
	}
	if h.o.Out == nil {
		return fail("delivery", errors.New("no outbound path configured"))
	}
	answer, err := h.askGreeting(ctx, log, c, p, tgt.Channel, now)
	if err != nil {
		return fail("model call", err)
	}
	g := parseGreeting(answer)
	if mine, err := h.claimGreeting(ctx, log, c.key, p, st); err != nil {
		return fail("claim the slot", err)
	} else if !mine {
		return Decision{Target: c.key, Action: ActionFailed, Reason: "another replica took this greeting slot; retried next tick"}, nil
	}
	if !g.Greet {
		st.Used, st.Retries = slotsUsedBy(p, st.Used, now), 0
		st.Declined++
		if err := h.saveState(ctx, c.key, st); err != nil {
			return Decision{Target: c.key, Action: ActionDeclined, Reason: g.Reason}, err
		}
		log.Info("greeting declined by the model", slog.String("reason", g.Reason))
		return Decision{Target: c.key, Action: ActionDeclined, Reason: g.Reason}, nil
	}
	turnID := fmt.Sprintf("heartbeat-%s-%d-%s", p.Day, st.Used+1, c.key)
	// The purpose lets a platform with a messaging window (WhatsApp) use
	// a greeting template where free-form text is refused.
	ids, err := h.o.Out.Deliver(channels.WithPurpose(ctx, channels.PurposeGreeting), tgt, turnID, g.Message)
	if err == nil && len(ids) == 0 {
		err = errors.New("the platform returned no message id")
	}
	if err != nil {
		if kind, _ := channels.ClassifyError(err); kind == channels.KindPermanent && ctx.Err() == nil {
			// Refused for good (a user who blocked the bot, WhatsApp's
			// 24-hour window without a greeting template): another tick
			// would only ask the model again. The slot is used.
			st.Used, st.Retries = slotsUsedBy(p, st.Used, now), 0
			log.Warn("greeting refused by the platform; the slot is used", slog.String("error", err.Error()))
			return Decision{Target: c.key, Action: ActionFailed, Reason: "delivery refused: " + err.Error()},
				errors.Join(fmt.Errorf("heartbeat: %s: delivery refused: %w", c.key, err), h.saveState(context.WithoutCancel(ctx), c.key, st))
		}
		if h.o.Claimer != nil { // the claimed key is spent: retry under the next
			st.Retries++
			err = errors.Join(err, h.saveState(context.WithoutCancel(ctx), c.key, st))
		}
		return fail("delivery", err)
	}
	saveErr := h.o.Store.AppendTurn(ctx, c.key, memory.Turn{
		ID: turnID, Started: now, Ended: now, FinishReason: "heartbeat", Answer: g.Message,
		Messages: []memory.Message{{Role: memory.RoleAssistant, Content: g.Message, Time: now}},
	})
	if saveErr != nil {
		// Delivered: count it anyway, or the user would be greeted twice.
		log.Error("greeting delivered but not saved into the session", slog.String("error", saveErr.Error()))
		saveErr = fmt.Errorf("heartbeat: save greeting into %s: %w", c.key, saveErr)
	}
	st.Used, st.Retries = slotsUsedBy(p, st.Used, now), 0
	st.Sent = append(st.Sent, now)
	err = errors.Join(saveErr, h.saveState(ctx, c.key, st))
	log.Info("greeting sent", slog.Int("used", st.Used), slog.Int("slots", len(p.Slots)))
	return Decision{Target: c.key, Action: ActionGreeted, Message: g.Message}, err
}

// slotsUsedBy returns how many of p's slots are used once a greeting (or a
// decline) at now used slot used: every other slot already due (missed while
// the user was busy or the daemon down: one greeting, never one per tick)
// and every slot less than half a segment ahead, so greetings stay spread
// over the window.
func slotsUsedBy(p DayPlan, used int, now time.Time) int {
	near := now.Add(p.WindowEnd.Sub(p.WindowStart) / time.Duration(2*len(p.Slots)))
	n := used + 1
	for n < len(p.Slots) && p.Slots[n].Before(near) {
		n++
	}
	return n
}
