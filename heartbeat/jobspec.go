package heartbeat

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// Job kinds, misfire policies, sources.
const (
	KindTask     = "task"
	KindReminder = "reminder"

	MisfireSkip    = "skip"
	MisfireRunOnce = "run_once"

	SourceConfig = "config" // defined in config.yaml
	SourceChat   = "chat"   // created at runtime with the schedule tool
)

// Run and delivery statuses (memory.JobRun.Status, memory.DeliveryStatus.Status).
const (
	RunRunning = "running"
	RunOK      = "ok"
	RunPartial = "partial" // some deliveries failed
	RunFailed  = "failed"  // execution failed or nothing was delivered
	RunSkipped = "skipped" // missed while the daemon was down (misfire skip), or refused by llm.budget

	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
	DeliverySkipped   = "skipped" // nothing to deliver (a status token answer)
)

// JobSpec is a job as stored (memory.JobRecord.Spec) and as config jobs are
// converted to.
type JobSpec struct {
	Name      string        `json:"name"`
	Kind      string        `json:"kind"`
	Schedule  string        `json:"schedule,omitempty"` // cron spec or @every (xor At)
	At        time.Time     `json:"at,omitzero"`        // one-shot time
	Timezone  string        `json:"timezone,omitempty"` // "" = bot timezone
	Persona   string        `json:"persona,omitempty"`
	Prompt    string        `json:"prompt,omitempty"` // task
	Text      string        `json:"text,omitempty"`   // reminder
	DeliverTo []string      `json:"deliver_to"`
	Misfire   string        `json:"misfire,omitempty"` // skip (default) | run_once
	Grace     time.Duration `json:"grace,omitempty"`   // 0 = DefaultGrace
	// Tools restricts a task's tools (nil = the persona's tools).
	Tools []string `json:"tools,omitempty"`
	// Approve lists tools (names or globs) that need a person's approval
	// (agent.require_approval, destructive MCP tools) which this task may call
	// anyway: nobody can /approve a scheduled run, so without it such calls
	// are denied (agent.ApprovalPolicy).
	Approve []string `json:"approve,omitempty"`
	// CreatedBy is the session key of the chat that created the job ("" for config jobs).
	CreatedBy string `json:"created_by,omitempty"`
}

// OneShot reports whether the job runs once, at At.
func (s JobSpec) OneShot() bool { return !s.At.IsZero() }

func (s JobSpec) grace() time.Duration {
	if s.Grace <= 0 {
		return DefaultGrace
	}
	return s.Grace
}

// When describes the schedule for people ("cron 0 9 * * * (Asia/Shanghai)").
func (s JobSpec) When() string {
	tz := s.Timezone
	if tz == "" {
		tz = "bot timezone"
	}
	if s.OneShot() {
		return "once at " + s.At.Format(time.RFC3339)
	}
	return fmt.Sprintf("%s (%s)", s.Schedule, tz)
}

// jobNameRe and maxJobName are the job name rule (the length apart: {1,64}
// compiles to a ~20 KB program).
var jobNameRe = regexp.MustCompile(`^[a-z0-9_-]+$`)

const maxJobName = 64

// Validate checks a spec: name, kind, schedule xor at, time zone,
// deliver_to addresses (channels.CheckTarget against known, the platform
// names; empty = any) and misfire policy.
func (s JobSpec) Validate(known []string) error {
	if len(s.Name) > maxJobName || !jobNameRe.MatchString(s.Name) {
		return fmt.Errorf("job name %q must be 1-64 characters of a-z, 0-9, _ and -", s.Name)
	}
	switch s.Kind {
	case KindTask:
		if strings.TrimSpace(s.Prompt) == "" {
			return fmt.Errorf("job %s: a task needs a prompt", s.Name)
		}
	case KindReminder:
		if strings.TrimSpace(s.Text) == "" {
			return fmt.Errorf("job %s: a reminder needs text", s.Name)
		}
	default:
		return fmt.Errorf("job %s: kind %q must be task or reminder", s.Name, s.Kind)
	}
	loc, err := loadLocation(s.Timezone, time.UTC)
	if err != nil {
		return fmt.Errorf("job %s: %w", s.Name, err)
	}
	switch {
	case s.OneShot() && s.Schedule != "":
		return fmt.Errorf("job %s: set either a schedule or an at time, not both", s.Name)
	case !s.OneShot():
		if _, err := parseSchedule(s, loc); err != nil {
			return fmt.Errorf("job %s: %w", s.Name, err)
		}
	}
	if len(s.DeliverTo) == 0 {
		return fmt.Errorf("job %s: deliver_to is empty", s.Name)
	}
	for _, t := range s.DeliverTo {
		if err := channels.CheckTarget(t, known); err != nil {
			return fmt.Errorf("job %s: deliver_to: %w", s.Name, err)
		}
	}
	switch s.Misfire {
	case "", MisfireSkip, MisfireRunOnce:
	default:
		return fmt.Errorf("job %s: misfire %q must be skip or run_once", s.Name, s.Misfire)
	}
	return nil
}
