package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/internal/tasks"
	"github.com/switchboard-bot/switchboard/memory"
)

// Background tasks (issue 31; package internal/tasks): the runner is built
// with the scheduler, over the store's memory.Tasks, running tasks through
// the same agent reference (so a reload's new model applies to the next
// task) and delivering through the same outbound router as jobs. It runs on
// every replica (claims are leases in the database); with bolt it takes over
// at start what a killed process left running. The spawn tool is registered
// when agent.tools enables it.

// buildTasks creates the task runner and registers the spawn tool.
func (d *Daemon) buildTasks(core *Core) error {
	ts, ok := core.Store.(memory.Tasks)
	if !ok {
		d.log.Warn("this store keeps no background tasks; the spawn tool is not offered")
		return nil
	}
	cfg := d.config()
	owner := ""
	if c := d.cluster.c; c != nil {
		owner = c.ReplicaID() + "-tasks"
	}
	d.tasks = tasks.New(tasks.Options{
		Store:       ts,
		Agent:       &d.agent,
		Deliver:     d.deliver,
		ToolNames:   core.Tools.Names,
		Owner:       owner,
		MaxPerChat:  cfg.Tasks.MaxPerChat,
		MaxRunning:  cfg.Tasks.MaxRunning,
		MaxDuration: cfg.Tasks.MaxDuration,
		LeaseTTL:    cfg.Cluster.LeaseTTL,
		Exclusive:   cfg.Storage.Backend != "postgres",
		Now:         d.opts.Now,
		Log:         d.log,
		OnRun:       func(state string) { d.metrics.ScheduledRun("task", state) },
	})
	return registerEnabled(cfg, core.Tools, tools.NewSpawn(d.tasks))
}

// startTasks starts the runner (Run); stopTasks stops it, releasing the
// tasks it runs to the queue for the next process.
func (d *Daemon) startTasks(ctx context.Context) {
	if d.tasks != nil {
		d.tasks.Start(ctx)
	}
}

func (d *Daemon) stopTasks() {
	if d.tasks != nil {
		d.tasks.Stop()
	}
}

// Tasks is the task runner (nil when the store keeps no tasks).
func (d *Daemon) Tasks() *tasks.Runner { return d.tasks }

// taskControl serves /tasks and /stop <id> (hub.TaskControl); the handler is
// built before the runner.
type taskControl struct{ d *Daemon }

func (c taskControl) List(ctx context.Context, chat string, limit int) ([]memory.TaskRecord, error) {
	if c.d.tasks == nil {
		return nil, nil
	}
	return c.d.tasks.List(ctx, chat, limit)
}

func (c taskControl) StopTask(ctx context.Context, id, chat string) (memory.TaskRecord, error) {
	if c.d.tasks == nil {
		return memory.TaskRecord{}, fmt.Errorf("stop task %s: %w", id, memory.ErrNotFound)
	}
	return c.d.tasks.StopTask(ctx, id, chat)
}

// taskCounts are the queued and running tasks, nil when unknown.
func (d *Daemon) taskCounts(ctx context.Context) *memory.TaskCounts {
	if d.tasks == nil {
		return nil
	}
	n, err := d.tasks.Counts(ctx)
	if err != nil {
		return nil
	}
	return &n
}

// tasksFact is the /status line of background tasks.
func (d *Daemon) tasksFact(ctx context.Context) string {
	n := d.taskCounts(ctx)
	if n == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "background tasks: %d running, %d queued (limit %d running)\n", n.Running, n.Queued, d.config().Tasks.MaxRunning)
	return b.String()
}
