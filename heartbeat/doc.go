// Package heartbeat owns everything the bot does on its own initiative: the
// one cron scheduler of the daemon, proactive greetings (the "heartbeat") and
// scheduled jobs (task reports and reminders), plus the two tools that reach
// it from a chat: `schedule` and `send_message`.
//
// # Options
//
// The package does not know config.yaml: it takes its own option types
// (Options, Config for the heartbeat section, JobSpec for each configured
// job) and internal/daemon maps the configuration to them, at start and on
// every reload (Scheduler.SetHeartbeatConfig, SetConfigJobs). Cron specs and
// active hours are parsed by heartbeat/schedule, which internal/config also
// uses to validate the file. Defaults: the operator-facing ones (heartbeat
// schedule, active hours, max_per_day, …) live in internal/config only;
// the scheduler's internal knobs (AlertAfter, MaxAttempts, RetryDelay,
// SweepSpec) are defined here; a job's grace is schedule.DefaultGrace, which
// config's Default() uses too.
//
// Files: scheduler.go (cron), heartbeat.go and greeting.go (greetings),
// jobspec.go (JobSpec: fields, validation), jobs.go (Jobs: the job set and
// its API), jobstate.go (persisted per-job state), jobrun.go (ticks, misfires,
// running and delivering), schedule.go (occurrences, relative/absolute time
// parsing), tools.go, sentlog.go, deps.go (interfaces, Options), claim.go
// (SlotClaimer: with replicas, each slot fires once cluster-wide; the
// daemon runs Scheduler.Lead on the replica holding the scheduler lease).
//
// # Time
//
// Every decision is a function of a `now` argument: Heartbeat.Tick(ctx, now)
// and Jobs.Tick(ctx, now) look at the persisted state and the clock value they
// are given and do whatever is due. The cron scheduler (robfig/cron/v3, with
// Recover and SkipIfStillRunning) only decides *when* to call them, so tests
// walk simulated months by calling Tick directly and a run that cron fires a
// little late (or twice) cannot change the outcome.
//
// # Heartbeat
//
// Targets are heartbeat.targets, or else every session whose key passes
// IsDirectAllowed (default: no thread part, not "job:", "cli:" or
// "heartbeat:") and whose user wrote in the last 30 days. A target is greeted
// when all hold: now is inside active_hours in the target's time zone
// (evaluated on local wall time, windows may cross midnight; a window that
// crosses midnight belongs to the day it opened); fewer than max_per_day
// slots of that window's day are used; at least one unused slot is due;
// the user's last message is older than idle_after; the chat is not busy.
// The slots are spread over the window (one per equal segment, at an offset
// hashed from day, target and index), so a restart computes the same plan,
// and a due slot stays due until used or the window closes. A greeting (or
// a decline) uses every slot already due and every slot less than half a
// segment ahead: slots missed while the user was busy or the daemon down
// make one greeting, not one per tick. A greeting the platform refuses for
// good (a permanent send error: a blocked bot, WhatsApp's 24-hour window
// without a greeting template) uses its slot too; other failures leave it
// due. When no target is eligible no model call is made. Greetings are
// delivered with channels.PurposeGreeting and reminder jobs with
// channels.PurposeReminder in their context, so such a platform can send a
// template instead.
//
// Design decision: ProcessDirect commits its turn (instruction as a user
// message) into the session it runs in, which would make the instruction look
// like user activity (SessionMeta.LastUserMessage) and pollute the chat. The
// greeting turn therefore runs in a side session "heartbeat:<target>", whose
// instruction carries the chat's recent history, notes and the user's name;
// only the greeting itself is written into the chat's session, as a one-message
// assistant turn (Store.AppendTurn), after delivery succeeded, and only then is
// the slot counted. The model answers {"action":"greet","message":…} or
// {"action":"skip","reason":…}; a "skip" uses the slot (no re-asking every
// tick); a model error or a failed delivery does not (retried next tick).
// Bare status tokens ("HEARTBEAT_OK", "NO_REPLY") are never delivered.
// The /heartbeat on|off switch is a KV flag that overrides heartbeat.enabled.
//
// # Jobs
//
// Config jobs come from config.yaml; runtime jobs are created by the schedule
// tool and stored as memory.JobRecord with a JobSpec as JSON. The per-job
// state (last scheduled time handled, pause flag, failure streak, one-shot
// attempts) lives in the KV bucket under "jobs/state/<name>" for both kinds.
// At each Tick the occurrences of a job's schedule after its last handled
// time and not after now are counted (never a burst): the latest one runs if
// it is at most grace late (default 5m); otherwise it is a misfire, and
// misfire "skip" records one "skipped" run while "run_once" runs it once.
// The occurrence is recorded as handled before its run starts; a run that a
// killed daemon left "running" is recorded as failed ("interrupted") at the
// first tick after the restart and, if no newer occurrence is due, run again
// under the same rules, once. Its deliveries keep their outbox key
// ("job-<name>-<slot>-<target>"), so only chunks without a platform receipt
// are sent again (the one resend DESIGN.md allows).
// A new job's first handled time is its creation (config jobs: their first
// sighting), so nothing before it is caught up; so is a config job's when a
// reload adds it back or its schedule, zone or at time changes
// (Jobs.scheduleKey): an edit is not downtime, and a one-shot given a new
// time runs again. A spec with fixed hours runs
// once per local date across DST changes (a skipped time runs when the
// clocks jump, a repeated one at its first pass; heartbeat/schedule).
// Reminders deliver their text verbatim without a model call; tasks run
// ProcessDirect in the session "job:<name>" with the job's persona (and
// tools) and deliver the answer to every deliver_to target, each delivery
// recorded separately ("delivered" only when the outbound path returned a
// platform message id). One-shot (`at`) jobs are retried on failure (only the undelivered targets, with the stored
// answer) up to MaxAttempts, and a runtime one-shot is removed after success.
// A failure streak of AlertAfter runs alerts the admins once per streak.
// Tool-created jobs use misfire run_once: a late reminder beats a lost one.
//
// # Tools
//
// ScheduleTool refuses to create jobs inside a job's turn, binds new jobs to
// the calling chat (deliver_to = its session key, persona = its persona) and
// lists/cancels only that chat's jobs. It refuses recurring schedules that
// run more often than MinChatJobInterval (5 minutes) or never, one-shots
// (in, at) more than schedule.MaxOneShotYears (5) ahead — as Jobs.Create
// does for every runtime job and internal/config for jobs[].at — and texts
// or prompts over MaxChatJobText characters. SendMessageTool sends to targets the
// Allowed func accepts (default: the calling chat and the calling job's
// deliver_to) and records each send in a SentLog, so the job runner (and the
// channels handler, through SentLog.WasSent) never delivers a final answer
// that a send_message of the same turn already delivered to the same target.
package heartbeat
