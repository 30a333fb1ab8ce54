package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/robfig/cron/v3"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/heartbeat/schedule"
)

type cronSchedule = cron.Schedule

// Scheduler owns the daemon's one cron scheduler and the Heartbeat and Jobs
// it drives. Build it with New, call Start once and Stop when shutting down.
type Scheduler struct {
	o    Options
	log  *slog.Logger
	hb   *Heartbeat
	jobs *Jobs

	mu         sync.Mutex
	c          *cron.Cron
	ctx        context.Context
	cancel     context.CancelFunc
	hbEntry    cron.EntryID
	jobEntries map[string]cron.EntryID
	started    bool
	stopped    bool // Stop ran: no further Start or Lead

	wg       sync.WaitGroup
	stopOnce sync.Once
}

// New builds a Scheduler; o.Store is required.
func New(o Options) (*Scheduler, error) {
	if o.Store == nil {
		return nil, errors.New("heartbeat: no store")
	}
	o = o.withDefaults()
	hb, err := NewHeartbeat(o)
	if err != nil {
		return nil, err
	}
	jobs, err := NewJobs(o)
	if err != nil {
		return nil, err
	}
	if o.Heartbeat.Schedule != "" {
		if _, err := schedule.Parse(o.Heartbeat.Schedule, o.Location); err != nil {
			return nil, fmt.Errorf("heartbeat: schedule: %w", err)
		}
	}
	if _, err := schedule.Parse(o.SweepSpec, o.Location); err != nil {
		return nil, fmt.Errorf("heartbeat: sweep schedule: %w", err)
	}
	return &Scheduler{o: o, log: o.Logger.With(slog.String("component", "scheduler")), hb: hb, jobs: jobs,
		jobEntries: map[string]cron.EntryID{}}, nil
}

// Heartbeat returns the greeting engine (SetEnabled/Enabled for /heartbeat).
func (s *Scheduler) Heartbeat() *Heartbeat { return s.hb }

// Jobs returns the job API (List, RunNow, Pause, Resume, Delete, NextRuns).
func (s *Scheduler) Jobs() *Jobs { return s.jobs }

// Sent returns the log of send_message deliveries (WasSent for the handler).
func (s *Scheduler) Sent() *SentLog { return s.o.Sent }

// ScheduleTool returns the `schedule` tool bound to this scheduler's jobs.
func (s *Scheduler) ScheduleTool() *ScheduleTool { return NewScheduleTool(s.jobs) }

// SendMessageTool returns the `send_message` tool; allowed may be nil (see
// NewSendMessageTool).
func (s *Scheduler) SendMessageTool(allowed func(ctx context.Context, ci agent.CallInfo, target string) bool) *SendMessageTool {
	return NewSendMessageTool(s.o.Out, s.o.Sent, s.jobs, allowed)
}

// cronLogger adapts slog to cron.Logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append([]any{slog.String("error", fmt.Sprint(err))}, kv...)...)
}

// Start starts the cron scheduler: the heartbeat on heartbeat.schedule, one
// entry per job, a catch-all sweep of the jobs (retries, anything cron
// skipped) and, right away in the background, the misfire pass over the
// runs missed while the daemon was down. Stop ends it.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.stopped {
		s.mu.Unlock()
		return errors.New("heartbeat: scheduler already started")
	}
	s.started = true
	s.jobs.recheckInterrupted()
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l := cronLogger{s.log}
	s.c = cron.New(cron.WithLocation(s.o.Location), cron.WithLogger(l),
		cron.WithChain(cron.Recover(l), cron.SkipIfStillRunning(l)))
	runCtx, cancelRun := s.ctx, s.cancel
	if err := s.scheduleHeartbeatLocked(s.o.Heartbeat); err != nil {
		s.mu.Unlock()
		return err
	}
	sweep, err := schedule.Parse(s.o.SweepSpec, s.o.Location)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("heartbeat: sweep schedule: %w", err)
	}
	s.c.Schedule(sweep, cron.FuncJob(func() {
		if err := s.jobs.Tick(runCtx, s.o.Now()); err != nil {
			s.log.Warn("jobs sweep", slog.String("error", err.Error()))
		}
	}))
	s.c.Start()
	s.mu.Unlock()

	s.jobs.mu.Lock()
	s.jobs.onChange = s.syncJobs
	s.jobs.mu.Unlock()
	s.syncJobs()

	// Stop cancels the caller's ctx as well as ours.
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
			cancelRun()
		case <-runCtx.Done():
		}
	}()
	go func() {
		defer s.wg.Done()
		if err := s.jobs.Tick(runCtx, s.o.Now()); err != nil {
			s.log.Warn("startup pass over missed job runs", slog.String("error", err.Error()))
		}
	}()
	s.log.Info("scheduler started", slog.String("heartbeat", s.o.Heartbeat.Schedule), slog.String("timezone", s.o.Location.String()))
	return nil
}

func (s *Scheduler) scheduleHeartbeatLocked(c Config) error {
	if s.hbEntry != 0 {
		s.c.Remove(s.hbEntry)
		s.hbEntry = 0
	}
	if c.Schedule == "" {
		return nil
	}
	sched, err := schedule.Parse(c.Schedule, s.o.Location)
	if err != nil {
		return fmt.Errorf("heartbeat: schedule: %w", err)
	}
	runCtx := s.ctx
	s.hbEntry = s.c.Schedule(sched, cron.FuncJob(func() {
		if _, err := s.hb.Tick(runCtx, s.o.Now()); err != nil {
			s.log.Warn("heartbeat tick", slog.String("error", err.Error()))
		}
	}))
	return nil
}

// SetHeartbeatConfig applies a reloaded heartbeat section, schedule included.
func (s *Scheduler) SetHeartbeatConfig(c Config) error {
	if err := s.hb.SetConfig(c); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Heartbeat = c
	if s.c == nil {
		return nil
	}
	return s.scheduleHeartbeatLocked(c)
}

// SetConfigJobs applies a reloaded jobs list.
func (s *Scheduler) SetConfigJobs(list []JobSpec) error { return s.jobs.SetConfigJobs(list) }

// Resync reschedules the jobs from the store (another replica changed
// them); a no-op while the scheduler is not running.
func (s *Scheduler) Resync() { s.syncJobs() }

// syncJobs replaces the cron entries of the jobs with the current set.
func (s *Scheduler) syncJobs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil || s.ctx.Err() != nil {
		return
	}
	scheds, err := s.jobs.schedules(s.ctx)
	if err != nil {
		s.log.Error("read jobs for the scheduler", slog.String("error", err.Error()))
		return
	}
	for name, id := range s.jobEntries {
		s.c.Remove(id)
		delete(s.jobEntries, name)
	}
	runCtx := s.ctx
	for name, sched := range scheds {
		s.jobEntries[name] = s.c.Schedule(sched, cron.FuncJob(func() {
			if err := s.jobs.TickJob(runCtx, name, s.o.Now()); err != nil {
				s.log.Warn("job tick", slog.String("job", name), slog.String("error", err.Error()))
			}
		}))
	}
}

// Lead runs the scheduler until ctx ends, then stops it and waits for
// running greetings and jobs: internal/daemon runs it under the cluster's
// "scheduler" lease, so only the leader ticks. Unlike Start it may be
// called again after it returned (the next leadership); every run begins
// with the pass over missed runs, so what fell due during a handover is
// handled under the usual misfire rules, and Options.Claimer keeps a slot
// from firing twice across leaders.
func (s *Scheduler) Lead(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	s.halt()
	return nil
}

// Stop stops the scheduler, cancels running greetings and jobs and waits for
// them. It is idempotent and safe to call without Start.
func (s *Scheduler) Stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		s.halt()
	})
}

// halt stops the cron scheduler and waits for what runs; Start may run
// again afterwards (unless Stop was called).
func (s *Scheduler) halt() {
	s.mu.Lock()
	c, cancel := s.c, s.cancel
	s.c, s.cancel = nil, nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if c != nil {
		<-c.Stop().Done()
	}
	s.wg.Wait()
	if s.jobs != nil {
		s.jobs.mu.Lock()
		s.jobs.onChange = nil
		s.jobs.mu.Unlock()
	}
	s.mu.Lock()
	s.started = false
	s.hbEntry = 0
	clear(s.jobEntries)
	s.mu.Unlock()
	if c != nil {
		s.log.Info("scheduler stopped")
	}
}
