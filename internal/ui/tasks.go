package ui

import (
	"errors"
	"net/http"

	"github.com/switchboard-bot/switchboard/memory"
)

// The Tasks page (issue 31): background tasks the spawn tool started, newest
// first — id, title, chat, state, attempts, times and an excerpt of the
// result or error, all rendered as text (a task's result is the model's).
// Read-only: a chat stops its tasks with /stop <id>.

// tasksShown bounds the list.
const tasksShown = 200

type tasksData struct {
	Tasks  []memory.TaskRecord
	Counts memory.TaskCounts
}

func (s *Server) tasksPage(w http.ResponseWriter, r *http.Request) {
	ts, ok := s.o.Backend.Store().(memory.Tasks)
	if !ok {
		s.fail(w, r, errors.New("this store keeps no background tasks"))
		return
	}
	list, err := ts.ListTasks(r.Context(), memory.TaskFilter{Limit: tasksShown})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := ts.CountTasks(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "tasks", tasksData{Tasks: list, Counts: n})
}
