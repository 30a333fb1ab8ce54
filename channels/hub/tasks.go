package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/memory"
)

// /tasks and /stop <id> (issue 31): a chat's background tasks, which the
// spawn tool starts and internal/tasks runs. Plain /stop keeps its meaning
// (stop the answer in progress); with an argument it stops that task of this
// chat only.

// TaskControl lists and stops background tasks (*tasks.Runner).
type TaskControl interface {
	List(ctx context.Context, chat string, limit int) ([]memory.TaskRecord, error)
	StopTask(ctx context.Context, id, chat string) (memory.TaskRecord, error)
}

// tasksShown bounds the list /tasks shows.
const tasksShown = 20

// isStopTurn says whether text is a plain /stop (stop the turn in progress),
// not "/stop t7".
func isStopTurn(text string) bool {
	return commandName(text) == "stop" && len(commandArgs(text)) == 0
}

// tasksCommand answers /tasks for chat key.
func (h *Handler) tasksCommand(ctx context.Context, it item, key string) {
	if h.tasks == nil {
		h.reply(it, "Background tasks are not available here.")
		return
	}
	list, err := h.tasks.List(ctx, key, tasksShown)
	if err != nil {
		h.log.Error("list tasks", "session", key, "err", err)
		h.reply(it, "Sorry, I could not read the tasks. The operator can find the cause in the log.")
		return
	}
	h.reply(it, tasksText(list, h.now()))
}

// tasksText renders /tasks: one line per task, newest first.
func tasksText(list []memory.TaskRecord, now time.Time) string {
	if len(list) == 0 {
		return "No background tasks in this chat."
	}
	var b strings.Builder
	b.WriteString("Background tasks (newest first):")
	for _, t := range list {
		title := t.Title
		if utf8.RuneCountInString(title) > 60 {
			title = string([]rune(title)[:59]) + "…"
		}
		fmt.Fprintf(&b, "\n%s — %s — %s, started %s ago", t.ID, title, t.State, age(now.Sub(t.Created)))
		if t.State == memory.TaskFailed && t.Error != "" {
			fmt.Fprintf(&b, " (%s)", t.Error)
		}
	}
	b.WriteString("\nStop one with /stop <id>.")
	return b.String()
}

// age renders d coarsely: "40s", "5m", "3h", "2d".
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// stopTaskCommand answers /stop <id> for chat key.
func (h *Handler) stopTaskCommand(ctx context.Context, it item, key string, args []string) {
	if h.tasks == nil {
		h.reply(it, "Background tasks are not available here.")
		return
	}
	if len(args) != 1 {
		h.reply(it, "Usage: /stop to stop the answer in progress, /stop ID to stop a background task (see /tasks).")
		return
	}
	id := strings.ToLower(args[0])
	before, err := h.tasks.StopTask(ctx, id, key)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		h.reply(it, fmt.Sprintf("This chat has no task %s. See /tasks.", clipTaskID(args[0])))
	case err != nil:
		h.log.Error("stop task", "session", key, "task", id, "err", err)
		h.reply(it, "Sorry, I could not stop the task. The operator can find the cause in the log.")
	case !before.Active():
		h.reply(it, fmt.Sprintf("Task %s already ended (%s).", before.ID, before.State))
	default:
		h.audit(it.msg.UserKey(), "command.stop_task", key, before.ID, "")
		h.reply(it, fmt.Sprintf("Task %s stopped.", before.ID))
	}
}

// clipTaskID bounds an id echoed back to the chat.
func clipTaskID(s string) string {
	if utf8.RuneCountInString(s) <= 20 {
		return s
	}
	return string([]rune(s)[:20]) + "…"
}
