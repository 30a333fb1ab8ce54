package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// buildScheduler creates the heartbeat and job scheduler and registers the
// schedule and send_message tools when agent.tools enables them.
func (d *Daemon) buildScheduler(core *Core) error {
	jobs, err := jobSpecs(d.config().Jobs)
	if err != nil {
		return fmt.Errorf("build the scheduler: %w", err)
	}
	sched, err := heartbeat.New(heartbeat.Options{
		Heartbeat: heartbeatConfig(d.config().Heartbeat),
		Jobs:      jobs,
		Location:  d.config().Bot.Location(),
		Channels:  d.config().Platforms().Names(),
		Store:     core.Store,
		Agent:     &d.agent,
		Out:       d.deliver,
		Busy:      d.handler,
		// heartbeat.targets empty: direct chats only, never groups.
		IsDirectAllowed: d.greetable,
		PersonaFor: func(key string) string {
			t, ok := channels.ParseTarget(key)
			if !ok {
				return ""
			}
			return core.Personas.Resolve(context.Background(), t)
		},
		GreetingHints: func(name string) string {
			p, ok := core.Personas.Get(name)
			if !ok {
				return ""
			}
			return p.Greeting
		},
		Alert:   d.alertAdmins,
		Claimer: d.slotClaimer(),
		// With replicas, the leader reschedules jobs changed elsewhere.
		OnJobsChange: d.jobsChanged,
		OnRun:        d.metrics.ScheduledRun,
		Now:          d.opts.Now,
		Logger:       d.log,
	})
	if err != nil {
		return fmt.Errorf("build the scheduler: %w", err)
	}
	d.sched = sched
	if err := registerEnabled(d.config(), core.Tools, sched.ScheduleTool()); err != nil {
		return err
	}
	return registerEnabled(d.config(), core.Tools, sched.SendMessageTool(d.sendAllowed))
}

// greetable reports whether the heartbeat may greet session key when
// heartbeat.targets is empty: a session heartbeat.DefaultIsDirectAllowed
// accepts, of a running channel, that the channel tells is a direct chat
// (channels.DirectTeller: not a group or channel where the bot was once
// mentioned). Channels that cannot tell (console, web) are the operator's.
func (d *Daemon) greetable(key string) bool {
	if !heartbeat.DefaultIsDirectAllowed(key) {
		return false
	}
	t, _ := channels.ParseTarget(key)
	ch, ok := d.handler.Channel(t.Channel)
	if !ok {
		return false
	}
	dt, ok := ch.(channels.DirectTeller)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	direct, err := dt.IsDirect(ctx, t)
	if err != nil {
		d.log.Warn("heartbeat: cannot tell whether a chat is direct; not greeting it now", "target", key, "err", err)
		return false
	}
	return direct
}

// heartbeatConfig maps the heartbeat: section to the scheduler's settings.
func heartbeatConfig(c config.Heartbeat) heartbeat.Config {
	return heartbeat.Config{Enabled: c.Enabled, Schedule: c.Schedule, ActiveHours: c.ActiveHours,
		IdleAfter: c.IdleAfter, MaxPerDay: c.MaxPerDay, Targets: slices.Clone(c.Targets)}
}

// jobSpecs maps the jobs: list to the scheduler's job specs.
func jobSpecs(list []config.Job) ([]heartbeat.JobSpec, error) {
	out := make([]heartbeat.JobSpec, 0, len(list))
	for _, c := range list {
		s := heartbeat.JobSpec{Name: c.Name, Kind: c.Kind, Schedule: c.Schedule, Timezone: c.Timezone,
			Persona: c.Persona, Prompt: c.Prompt, Text: c.Text, DeliverTo: slices.Clone(c.DeliverTo),
			Misfire: c.Misfire, Grace: c.Grace, Approve: slices.Clone(c.Approve)}
		if c.At != "" {
			at, err := time.Parse(time.RFC3339, c.At)
			if err != nil {
				return nil, fmt.Errorf("jobs: job %s: at %q is not an RFC 3339 time", c.Name, c.At)
			}
			s.At = at
		}
		out = append(out, s)
	}
	return out, nil
}

// sendAllowed is send_message's rule (heartbeat.TurnMayReach): a chat turn
// reaches only its own chat, a job's turn only the job's deliver_to. Being
// listed in access.allow_from or bot.admins does not make a chat reachable
// from other chats' turns.
func (d *Daemon) sendAllowed(ctx context.Context, ci agent.CallInfo, target string) bool {
	return heartbeat.TurnMayReach(ctx, d.sched.Jobs(), ci, target)
}

// alertAdmins tells every admin reachable as a chat target (and always the log).
func (d *Daemon) alertAdmins(ctx context.Context, text string) {
	d.log.Warn("admin alert", "text", text)
	for _, a := range d.config().Bot.Admins {
		t, ok := adminTarget(d.config().Platforms(), a)
		if !ok {
			continue
		}
		if _, err := d.deliver.Deliver(ctx, t, "", text); err != nil {
			d.log.Warn("alert admin", "admin", a, "err", err)
		}
	}
}

// adminTarget maps an admin entry to a chat: a target as is; a user id
// ("<platform>:user:<id>") through its platform's direct-chat rule
// (platform.Descriptor.DirectChat: a Telegram user id is also its private
// chat id), when the platform has one.
func adminTarget(reg *platform.Registry, a string) (channels.Target, bool) {
	if t, ok := channels.ParseTarget(a); ok {
		return t, true
	}
	name, id, ok := strings.Cut(a, ":user:")
	if !ok || id == "" {
		return channels.Target{}, false
	}
	if p, ok := reg.Lookup(name); ok && p.DirectChat != nil {
		if chat, ok := p.DirectChat(id); ok {
			return channels.Target{Channel: name, ChatID: chat}, true
		}
	}
	return channels.Target{}, false
}

// jobsText is the /jobs answer.
func (d *Daemon) jobsText(ctx context.Context) string {
	list, err := d.sched.Jobs().List(ctx)
	if err != nil {
		return "Could not list jobs: " + err.Error()
	}
	if len(list) == 0 {
		return "No scheduled jobs."
	}
	var b strings.Builder
	for _, j := range list {
		fmt.Fprintf(&b, "• %s (%s, %s)", j.Spec.Name, j.Spec.Kind, j.Source)
		switch {
		case j.Paused:
			b.WriteString(" — paused")
		case !j.Next.IsZero():
			fmt.Fprintf(&b, " — next %s", j.Next.In(d.config().Bot.Location()).Format(time.DateTime))
		}
		if j.LastRun != nil {
			fmt.Fprintf(&b, " — last %s", j.LastRun.Status)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Scheduler returns the heartbeat and job scheduler.
func (d *Daemon) Scheduler() *heartbeat.Scheduler { return d.sched }

// JobRow is one line of `switchboard jobs list`.
type JobRow struct {
	Name       string    `json:"name"`
	Kind       string    `json:"kind"`
	Source     string    `json:"source"`
	Schedule   string    `json:"schedule"`
	Next       time.Time `json:"next"`
	LastStatus string    `json:"last_status,omitempty"`
	State      string    `json:"state"`
}

// JobRows lists the jobs for the CLI and the admin endpoint.
func (d *Daemon) JobRows(ctx context.Context) ([]JobRow, error) {
	list, err := d.sched.Jobs().List(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]JobRow, 0, len(list))
	for _, j := range list {
		r := JobRow{Name: j.Spec.Name, Kind: j.Spec.Kind, Source: j.Source, Schedule: j.Spec.Schedule, Next: j.Next, State: "active"}
		if j.Spec.OneShot() {
			r.Schedule = "at " + j.Spec.At.Format(time.RFC3339)
		}
		switch {
		case j.Paused:
			r.State = "paused"
		case j.Done:
			r.State = "done"
		}
		if j.LastRun != nil {
			r.LastStatus = j.LastRun.Status
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// JobAction runs, pauses, resumes or deletes a job and says what happened.
func (d *Daemon) JobAction(ctx context.Context, action, name string) (string, error) {
	jobs := d.sched.Jobs()
	switch action {
	case "run":
		run, err := jobs.RunNow(ctx, name)
		if err != nil {
			return "", err
		}
		msg := fmt.Sprintf("ran %s: %s", name, run.Status)
		for _, dl := range run.Deliveries {
			msg += fmt.Sprintf("\n  %s: %s", dl.Target, dl.Status)
			if dl.Error != "" {
				msg += " (" + dl.Error + ")"
			}
		}
		if run.Error != "" {
			msg += "\n  error: " + run.Error
		}
		return msg, nil
	case "pause":
		return "paused " + name, jobs.Pause(ctx, name)
	case "resume":
		return "resumed " + name, jobs.Resume(ctx, name)
	case "delete":
		return "deleted " + name, jobs.Delete(ctx, name)
	}
	return "", fmt.Errorf("unknown job action %q", action)
}
