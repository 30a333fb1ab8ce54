package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// SessionKey is the session a task's sub-agent runs in.
func SessionKey(t memory.TaskRecord) string { return t.Chat + "#task:" + t.ID }

// JobName is the task's name in agent.CallInfo.JobName and the usage book.
func JobName(id string) string { return "task:" + id }

// OutboxKey keys the outbox records of the task's result.
func OutboxKey(id string) string { return "task:" + id }

// execute runs t's sub-agent, renewing the lease meanwhile, and records and
// delivers the outcome (unless the task was stopped, lost or the runner is
// stopping).
func (r *Runner) execute(ctx context.Context, t memory.TaskRecord, rn *run) {
	log := r.log.With(slog.String("task", t.ID), slog.String("chat", t.Chat))
	runCtx, cancel := context.WithTimeoutCause(ctx, r.o.MaxDuration, errTooLong)
	defer cancel()
	renewDone := make(chan struct{})
	renewStop := make(chan struct{})
	go func() {
		defer close(renewDone)
		r.renew(ctx, t.ID, rn, renewStop, log)
	}()
	text, err := r.o.Agent.ProcessDirect(runCtx, SessionKey(t), t.Prompt, agent.DirectOptions{
		Persona:   t.Persona,
		Tools:     r.tools(t.Tools),
		JobName:   JobName(t.ID),
		DeliverTo: slices.Clone(t.Targets()),
		Runtime:   agent.Runtime{ChatType: "task"},
		// A chat's task is the chat's work: its tokens count against the
		// chat's budget (spawning is no way around it). A job's task
		// counts against the daily total, as the job does.
		BillTo:      billTo(t),
		TokenBudget: t.Budget,
		// It works in the files of the chat (or job) that spawned it: it
		// reads them, and what it writes is that chat's, in its bounds.
		FilesOf: t.Chat,
	})
	close(renewStop)
	<-renewDone

	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errStopped):
		log.Info("task stopped")
		r.report("canceled")
		return
	case errors.Is(cause, errLost):
		log.Warn("task claim lost (canceled or taken over by another runner); its result is dropped")
		return
	case ctx.Err() != nil:
		// The runner is stopping: the next process runs it again.
		r.release(t)
		return
	}
	var o memory.TaskOutcome
	switch {
	case err == nil:
		o = memory.TaskOutcome{State: memory.TaskDone, Result: strings.TrimSpace(text)}
	case errors.Is(context.Cause(runCtx), errTooLong):
		o = memory.TaskOutcome{State: memory.TaskFailed, Error: fmt.Sprintf("took longer than %s", r.o.MaxDuration)}
	default:
		o = memory.TaskOutcome{State: memory.TaskFailed, Error: agent.FriendlyError(err)}
	}
	r.finish(ctx, t, o)
}

var errTooLong = errors.New("task took longer than tasks.max_duration")

// tools is the allowlist of a task's sub-agent: the tools it asked for (all
// when none), never spawn.
func (r *Runner) tools(asked []string) []string {
	var names []string
	if r.o.ToolNames != nil {
		names = r.o.ToolNames()
	}
	out := []string{}
	for _, n := range names {
		if n == SpawnTool || (asked != nil && !agent.AllowedBy(asked, n)) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// renew keeps t's lease alive until stop; a lost claim cancels the run.
func (r *Runner) renew(ctx context.Context, id string, rn *run, stop <-chan struct{}, log *slog.Logger) {
	every := r.o.LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := r.o.Store.RenewTask(ctx, id, r.o.Owner, r.o.Now().Add(r.o.LeaseTTL))
		switch {
		case errors.Is(err, memory.ErrTaskLost):
			r.mu.Lock()
			stopped := rn.canceled
			r.mu.Unlock()
			if stopped {
				rn.cancel(errStopped)
			} else {
				rn.cancel(errLost)
			}
			return
		case err != nil:
			log.Warn("renewing a task's lease failed; retrying", slog.String("err", err.Error()))
		}
	}
}

// finish records o for t (a conditional write: only while this runner holds
// it) and delivers it.
func (r *Runner) finish(ctx context.Context, t memory.TaskRecord, o memory.TaskOutcome) {
	now := r.o.Now()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.o.Store.FinishTask(wctx, t.ID, r.o.Owner, o, now, now.Add(r.o.LeaseTTL)); err != nil {
		if errors.Is(err, memory.ErrTaskLost) {
			r.log.Info("task ended elsewhere (stopped or taken over); not delivering", slog.String("task", t.ID))
		} else {
			r.log.Error("recording a task's outcome failed; it runs again after its lease", slog.String("task", t.ID), slog.String("err", err.Error()))
		}
		return
	}
	r.report(o.State)
	t.State, t.Result, t.Error, t.Ended = o.State, o.Result, o.Error, now
	r.deliver(ctx, t)
}

func (r *Runner) report(state string) {
	if r.o.OnRun != nil {
		r.o.OnRun(state)
	}
}

// Message is what the chat is told when t ended.
func Message(t memory.TaskRecord) string {
	name := "Task " + t.ID
	if t.Title != "" {
		name += " (" + t.Title + ")"
	}
	if t.State == memory.TaskFailed {
		return name + " failed: " + t.Error
	}
	res := t.Result
	if res == "" {
		res = "(no answer)"
	}
	return name + " finished:\n\n" + res
}

// deliver sends t's outcome to its targets and marks it delivered. A target
// that fails is retried after the lease (by whichever runner claims the
// delivery), for GiveUpDelivery.
func (r *Runner) deliver(ctx context.Context, t memory.TaskRecord) {
	log := r.log.With(slog.String("task", t.ID))
	dctx := context.WithoutCancel(ctx)
	text := Message(t)
	var failed []string
	for _, to := range t.Targets() {
		target, ok := channels.ParseTarget(to)
		if !ok {
			log.Error("a task's chat is not a deliverable target; its result is kept in the store only", slog.String("target", to))
			continue
		}
		if _, err := r.o.Deliver.Deliver(dctx, target, OutboxKey(t.ID), text); err != nil {
			failed = append(failed, to)
			log.Warn("delivering a task's result failed", slog.String("target", to), slog.String("err", err.Error()))
		}
	}
	if len(failed) > 0 && r.o.Now().Sub(t.Ended) < GiveUpDelivery {
		return // claimed again for delivery when the lease expired
	}
	if len(failed) > 0 {
		log.Error("giving up delivering a task's result", slog.Any("targets", failed))
	}
	wctx, cancel := context.WithTimeout(dctx, 10*time.Second)
	defer cancel()
	if err := r.o.Store.MarkTaskDelivered(wctx, t.ID, r.o.Owner); err != nil {
		log.Warn("recording a task's delivery failed", slog.String("err", err.Error()))
	}
}

// billTo is the chat a task's usage is billed to: the spawning chat, or
// none for a job's task.
func billTo(t memory.TaskRecord) string {
	if t.Job != "" {
		return ""
	}
	return t.Chat
}
