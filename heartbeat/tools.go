package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
)

// ScheduleTool is the `schedule` tool: create, list and cancel the calling
// chat's jobs.
type ScheduleTool struct {
	jobs *Jobs
}

// NewScheduleTool returns the schedule tool over jobs.
func NewScheduleTool(jobs *Jobs) *ScheduleTool { return &ScheduleTool{jobs: jobs} }

var _ agent.Tool = (*ScheduleTool)(nil)

// Name is "schedule".
func (*ScheduleTool) Name() string { return "schedule" }

// Description tells the model what the tool does.
func (*ScheduleTool) Description() string {
	return "Schedule a reminder (text sent as is) or a task (a prompt you will run then, answer sent to this chat), " +
		"list this chat's scheduled jobs, or cancel one. For create give exactly one of: in (relative, e.g. \"20m\", \"2h\", \"1 day\"), " +
		"at (RFC 3339 or \"2025-01-31 09:00\" in timezone) or cron (\"0 9 * * 1-5\", optional leading seconds, or \"@every 30m\"; " +
		"at most once every 5 minutes). A one-shot (in or at) may be at most " + strconv.Itoa(schedule.MaxOneShotYears) + " years ahead."
}

// Schema is the JSON Schema of the arguments (scheduleArgs).
func (*ScheduleTool) Schema() json.RawMessage { return scheduleSchema() }

// scheduleArgs are the schedule tool's arguments; its schema is generated
// from them.
type scheduleArgs struct {
	Action   string `json:"action"`
	Name     string `json:"name,omitempty" jsonschema:"job name (a-z, 0-9, _ and -); optional for create, required for cancel"`
	Kind     string `json:"kind,omitempty" jsonschema:"default: task if prompt is given, else reminder"`
	Text     string `json:"text,omitempty" jsonschema:"reminder text, delivered verbatim (at most 4000 characters)"`
	Prompt   string `json:"prompt,omitempty" jsonschema:"task instruction, run by you at the scheduled time (at most 4000 characters)"`
	At       string `json:"at,omitempty" jsonschema:"one-shot time"`
	In       string `json:"in,omitempty" jsonschema:"one-shot delay from now, e.g. 20m"`
	Cron     string `json:"cron,omitempty" jsonschema:"recurring schedule"`
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA zone for at and cron; default the bot's"`
}

var scheduleSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[scheduleArgs](func(p map[string]*jsonschema.Schema) {
		p["action"].Enum = []any{"create", "list", "cancel"}
		p["kind"].Enum = []any{"reminder", "task"}
	})
})

// Call runs the action.
func (t *ScheduleTool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a scheduleArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("schedule: bad arguments: %w", err)
	}
	ci, _ := agent.CallInfoFrom(ctx)
	if ci.SessionKey == "" {
		return "", errors.New("schedule: no chat to bind the job to")
	}
	switch a.Action {
	case "create":
		return t.create(ctx, ci, a)
	case "list":
		return t.list(ctx, ci)
	case "cancel":
		return t.cancel(ctx, ci, a.Name)
	}
	return "", fmt.Errorf("schedule: unknown action %q (create, list or cancel)", a.Action)
}

func deliverable(key string) bool {
	for _, p := range []string{"job:", "cli:", "heartbeat:"} {
		if strings.HasPrefix(key, p) {
			return false
		}
	}
	_, ok := channels.ParseTarget(key)
	return ok
}

var nameSanitizeRe = regexp.MustCompile(`[^a-z0-9_-]+`)

func slug(s string, words int) string {
	f := strings.Fields(strings.ToLower(s))
	if len(f) > words {
		f = f[:words]
	}
	out := strings.Trim(nameSanitizeRe.ReplaceAllString(strings.Join(f, "-"), ""), "-_")
	if len(out) > 30 {
		out = out[:30]
	}
	return out
}

func (t *ScheduleTool) create(ctx context.Context, ci agent.CallInfo, a scheduleArgs) (string, error) {
	if ci.JobName != "" {
		return "", fmt.Errorf("schedule: %w", ErrJobFromJob)
	}
	if !deliverable(ci.SessionKey) {
		return "", fmt.Errorf("schedule: this chat (%s) cannot receive scheduled messages", ci.SessionKey)
	}
	now := t.jobs.o.Now()
	spec, loc, err := t.buildSpec(ci, a, now)
	if err != nil {
		return "", err
	}
	// One create at a time, so parallel calls cannot all pass the quota.
	t.jobs.createMu.Lock()
	err = t.checkQuota(ctx, ci.SessionKey)
	if err == nil {
		spec, err = t.store(ctx, ci, a.Name, spec, now)
	}
	t.jobs.createMu.Unlock()
	if err != nil {
		return "", err
	}
	next, err := t.jobs.NextRuns(ctx, spec.Name, 1)
	if err != nil || len(next) == 0 {
		return fmt.Sprintf("Scheduled %s %q (%s).", spec.Kind, spec.Name, spec.When()), nil
	}
	return fmt.Sprintf("Scheduled %s %q: next run %s (in %s). It will be delivered to this chat. Cancel it with action cancel, name %q.",
		spec.Kind, spec.Name, next[0].In(loc).Format("Mon 2006-01-02 15:04 MST"), humanDuration(next[0].Sub(now)), spec.Name), nil
}

// buildSpec turns the tool's arguments into a spec bound to the calling
// chat (without a name) and returns the zone its times are read in.
func (t *ScheduleTool) buildSpec(ci agent.CallInfo, a scheduleArgs, now time.Time) (JobSpec, *time.Location, error) {
	kind := a.Kind
	if kind == "" {
		kind = KindReminder
		if strings.TrimSpace(a.Prompt) != "" && strings.TrimSpace(a.Text) == "" {
			kind = KindTask
		}
	}
	for _, f := range [...]struct{ what, v string }{{"text", a.Text}, {"prompt", a.Prompt}} {
		if n := utf8.RuneCountInString(f.v); n > MaxChatJobText {
			return JobSpec{}, nil, fmt.Errorf("schedule: the %s has %d characters; at most %d characters", f.what, n, MaxChatJobText)
		}
	}
	loc, err := loadLocation(a.Timezone, t.jobs.o.Location)
	if err != nil {
		return JobSpec{}, nil, fmt.Errorf("schedule: %w", err)
	}
	spec := JobSpec{Kind: kind, Text: a.Text, Prompt: a.Prompt, Timezone: a.Timezone, Persona: ci.Persona,
		DeliverTo: []string{ci.SessionKey}, Misfire: MisfireRunOnce, CreatedBy: ci.SessionKey}
	set := 0
	for _, v := range []string{a.At, a.In, a.Cron} {
		if strings.TrimSpace(v) != "" {
			set++
		}
	}
	if set != 1 {
		return JobSpec{}, nil, errors.New("schedule: give exactly one of in, at or cron")
	}
	switch {
	case a.In != "":
		d, err := parseIn(a.In)
		if err != nil {
			return JobSpec{}, nil, fmt.Errorf("schedule: in: %w", err)
		}
		if err := schedule.CheckOneShotIn(a.In, d, now, loc); err != nil {
			return JobSpec{}, nil, fmt.Errorf("schedule: in: %w", err)
		}
		spec.At = now.Add(d).Truncate(time.Second)
	case a.At != "":
		at, err := parseAt(a.At, loc)
		if err != nil {
			return JobSpec{}, nil, fmt.Errorf("schedule: at: %w", err)
		}
		if !at.After(now) {
			return JobSpec{}, nil, fmt.Errorf("schedule: at %s is in the past (now is %s)", at.In(loc).Format(time.RFC3339), now.In(loc).Format(time.RFC3339))
		}
		if err := schedule.CheckOneShot(at, now); err != nil {
			return JobSpec{}, nil, fmt.Errorf("schedule: at %w", err)
		}
		spec.At = at
	default:
		spec.Schedule = strings.TrimSpace(a.Cron)
		if err := checkChatSchedule(spec.Schedule, loc, now); err != nil {
			return JobSpec{}, nil, err
		}
	}
	if spec.OneShot() && spec.Timezone == "" {
		spec.Timezone = loc.String()
	}
	return spec, loc, nil
}

// checkChatSchedule refuses a recurring schedule for a chat-made job that
// never runs or runs more often than MinChatJobInterval (judged over its
// next runs). A spec that does not parse is left to JobSpec.Validate.
func checkChatSchedule(spec string, loc *time.Location, now time.Time) error {
	sched, err := schedule.Parse(spec, loc)
	if err != nil {
		return nil
	}
	prev := sched.Next(now)
	if prev.IsZero() {
		return fmt.Errorf("schedule: cron %q never runs (it names a date that does not exist)", spec)
	}
	for range 50 {
		next := sched.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); gap < MinChatJobInterval {
			return fmt.Errorf("schedule: cron %q runs again after %s; a job made in chat may run at most once every %s",
				spec, humanDuration(gap), humanDuration(MinChatJobInterval))
		}
		prev = next
	}
	return nil
}

// checkQuota refuses a new job when the chat already has MaxJobsPerChat,
// counting the jobs made in all its threads (a new thread is no new quota).
func (t *ScheduleTool) checkQuota(ctx context.Context, chat string) error {
	infos, err := t.jobs.List(ctx)
	if err != nil {
		return err
	}
	mine := 0
	for _, in := range infos {
		if sameChat(in.Spec.CreatedBy, chat) {
			mine++
		}
	}
	if mine >= MaxJobsPerChat {
		return fmt.Errorf("schedule: %w (%d); cancel some first", ErrTooManyJobs, MaxJobsPerChat)
	}
	return nil
}

// sameChat reports whether session keys a and b are the same chat, their
// threads apart.
func sameChat(a, b string) bool {
	ta, okA := channels.ParseTarget(a)
	tb, okB := channels.ParseTarget(b)
	if !okA || !okB {
		return a == b
	}
	return ta.Channel == tb.Channel && ta.ChatID == tb.ChatID
}

// store creates the job under the requested name or, without one, under a
// generated name ("<kind>-<slug>-<hash>", suffixed on a clash).
func (t *ScheduleTool) store(ctx context.Context, ci agent.CallInfo, name string, spec JobSpec, now time.Time) (JobSpec, error) {
	if name != "" {
		spec.Name = strings.Trim(nameSanitizeRe.ReplaceAllString(strings.ToLower(strings.TrimSpace(name)), "-"), "-")
		if len(spec.Name) > 64 {
			spec.Name = spec.Name[:64]
		}
		if err := t.jobs.Create(ctx, spec); err != nil {
			return spec, fmt.Errorf("schedule: %w", err)
		}
		return spec, nil
	}
	body := spec.Text
	if spec.Kind == KindTask {
		body = spec.Prompt
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s|%s|%d", ci.SessionKey, body, now.UnixNano())
	base := spec.Kind
	if s := slug(body, 3); s != "" {
		base += "-" + s
	}
	base = fmt.Sprintf("%s-%04x", base, h.Sum32()&0xffff)
	for i := 1; ; i++ {
		spec.Name = base
		if i > 1 {
			spec.Name = fmt.Sprintf("%s-%d", base, i)
		}
		err := t.jobs.Create(ctx, spec)
		if err == nil {
			return spec, nil
		}
		if !errors.Is(err, ErrJobNameInUse) || i >= 20 {
			return spec, fmt.Errorf("schedule: %w", err)
		}
	}
}

func (t *ScheduleTool) list(ctx context.Context, ci agent.CallInfo) (string, error) {
	infos, err := t.jobs.List(ctx)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, in := range infos {
		mine := in.Spec.CreatedBy == ci.SessionKey
		cfgHere := in.Source == SourceConfig && slices.Contains(in.Spec.DeliverTo, ci.SessionKey)
		if !mine && !cfgHere {
			continue
		}
		what := in.Spec.Text
		if in.Spec.Kind == KindTask {
			what = in.Spec.Prompt
		}
		line := fmt.Sprintf("- %s (%s, %s): %q", in.Spec.Name, in.Spec.Kind, in.Spec.When(), oneLine(what, 80))
		switch {
		case in.Paused:
			line += " — paused"
		case in.Done:
			line += " — finished"
		case !in.Next.IsZero():
			line += " — next " + in.Next.Format("Mon 2006-01-02 15:04 MST")
		}
		if cfgHere {
			line += " [config.yaml; cannot be cancelled here]"
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return "No jobs are scheduled for this chat.", nil
	}
	return "Jobs of this chat:\n" + strings.Join(lines, "\n"), nil
}

func (t *ScheduleTool) cancel(ctx context.Context, ci agent.CallInfo, name string) (string, error) {
	if strings.TrimSpace(name) == "" {
		return "", errors.New("schedule: cancel needs the job's name (use action list)")
	}
	s, src, err := t.jobs.spec(ctx, name)
	if err != nil {
		return "", fmt.Errorf("schedule: %w", err)
	}
	if src == SourceConfig {
		return "", fmt.Errorf("schedule: %q: %w; only an operator can remove it", name, ErrConfigJob)
	}
	if s.CreatedBy != ci.SessionKey {
		return "", fmt.Errorf("schedule: %q: %w in this chat", name, ErrNoSuchJob)
	}
	if err := t.jobs.Delete(ctx, name); err != nil {
		return "", fmt.Errorf("schedule: %w", err)
	}
	return fmt.Sprintf("Cancelled %q.", name), nil
}

// SendMessageTool is the `send_message` tool: send text to a target the
// calling persona may reach.
type SendMessageTool struct {
	out     Deliverer
	sent    *SentLog
	allowed func(ctx context.Context, ci agent.CallInfo, target string) bool
	log     *slog.Logger
}

// NewSendMessageTool returns the send_message tool. allowed decides which
// targets a turn may reach; nil means TurnMayReach (jobs may be nil).
func NewSendMessageTool(out Deliverer, sent *SentLog, jobs *Jobs, allowed func(ctx context.Context, ci agent.CallInfo, target string) bool) *SendMessageTool {
	if sent == nil {
		sent = NewSentLog(0)
	}
	log := slog.New(slog.DiscardHandler)
	if jobs != nil {
		log = jobs.log
	}
	if allowed == nil {
		allowed = func(ctx context.Context, ci agent.CallInfo, target string) bool {
			return TurnMayReach(ctx, jobs, ci, target)
		}
	}
	return &SendMessageTool{out: out, sent: sent, allowed: allowed, log: log}
}

// TurnMayReach is send_message's rule, decided by the running turn alone (its
// agent.CallInfo): a chat turn may send only to its own chat (SessionKey); a
// job's turn only to the job's deliver_to (CallInfo.DeliverTo, or, when the
// caller did not set it, the job's current spec in jobs). Config-wide lists
// such as access.allow_from or bot.admins never widen it: a stranger's turn
// in open mode must not reach the admin's chat or an allowlisted group.
func TurnMayReach(ctx context.Context, jobs *Jobs, ci agent.CallInfo, target string) bool {
	if ci.JobName == "" {
		return ci.SessionKey != "" && target == ci.SessionKey
	}
	deliverTo := ci.DeliverTo
	if deliverTo == nil && jobs != nil {
		if s, _, err := jobs.spec(ctx, ci.JobName); err == nil {
			deliverTo = s.DeliverTo
		}
	}
	return slices.Contains(deliverTo, target)
}

var _ agent.Tool = (*SendMessageTool)(nil)

// Name is "send_message".
func (*SendMessageTool) Name() string { return "send_message" }

// Description tells the model what the tool does.
func (*SendMessageTool) Description() string {
	return "Send a message to a chat, addressed as <channel>:<chat_id>[:<thread_id>] (e.g. slack:C0123). " +
		"Without target it goes to the current chat. Only the current chat can be reached (in a scheduled job: " +
		"the job's delivery targets). Do not repeat the same text in your final answer."
}

// Schema is the JSON Schema of the arguments (sendMessageArgs).
func (*SendMessageTool) Schema() json.RawMessage { return sendMessageSchema() }

// sendMessageArgs are send_message's arguments; its schema is generated from
// them.
type sendMessageArgs struct {
	Target string `json:"target,omitempty" jsonschema:"<channel>:<chat_id>[:<thread_id>]; default the current chat"`
	Text   string `json:"text"`
}

var sendMessageSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[sendMessageArgs](func(p map[string]*jsonschema.Schema) {
		p["text"].MinLength = jsonschema.Ptr(1)
	})
})

// Call sends the message.
func (t *SendMessageTool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a sendMessageArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("send_message: bad arguments: %w", err)
	}
	ci, _ := agent.CallInfoFrom(ctx)
	target := strings.TrimSpace(a.Target)
	if target == "" {
		target = ci.SessionKey
	}
	if strings.TrimSpace(a.Text) == "" {
		return "", errors.New("send_message: text is empty")
	}
	tgt, ok := channels.ParseTarget(target)
	if !ok || !deliverable(target) {
		return "", fmt.Errorf("send_message: %q is not a chat address such as telegram:12345", target)
	}
	if !t.allowed(ctx, ci, target) {
		t.log.Warn("send_message refused: the target is not this turn's chat", slog.String("target", target),
			slog.String("session", ci.SessionKey), slog.String("job", ci.JobName))
		return "", agent.Permanent(fmt.Errorf("send_message: you are not allowed to send to %s: a chat turn may send only to its own chat, a job only to its deliver_to targets", target))
	}
	if t.out == nil {
		return "", errors.New("send_message: no outbound path configured")
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s", target, a.Text)
	turnID := fmt.Sprintf("send-%s-%x", ci.TurnID, h.Sum64())
	if ci.TurnID == "" {
		turnID = ""
	}
	ids, err := t.out.Deliver(ctx, tgt, turnID, a.Text)
	if err != nil {
		return "", fmt.Errorf("send_message to %s: %w", target, err)
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("send_message to %s: the platform returned no message id", target)
	}
	t.sent.Record(SentEntry{TurnID: ci.TurnID, SessionKey: ci.SessionKey, Target: target, Text: a.Text, MessageIDs: ids})
	t.log.Info("send_message delivered", slog.String("target", target), slog.String("session", ci.SessionKey))
	return fmt.Sprintf("Sent to %s (message id %s).", target, strings.Join(ids, ",")), nil
}
