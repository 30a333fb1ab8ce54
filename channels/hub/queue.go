package hub

import (
	"context"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

type item struct {
	id       uint64
	msg      channels.Message
	decision channels.Decision
	answered bool // replay: the turn is committed, only delivery is left
	answer   string
	turnID   string
	received time.Time // when the inbox accepted it (the queue's wait starts there)
}

type session struct {
	key     string
	queue   []item
	running bool
	cancel  context.CancelFunc
	stopped bool            // the running turn was canceled by /stop
	wake    bool            // claims mode: look at the session's pending items again
	held    context.Context // claims mode: canceled when the session's claim is lost
}

func (h *Handler) enqueue(key string, it item) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[key]
	if s == nil {
		s = &session{key: key}
		h.sessions[key] = s
	}
	s.queue = append(s.queue, it)
	if !s.running {
		s.running = true
		h.workers.Add(1)
		go h.work(s)
	}
}

// work drains one session's queue, one turn at a time; it exits when the
// queue is empty.
func (h *Handler) work(s *session) {
	defer h.workers.Done()
	for {
		h.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			delete(h.sessions, s.key)
			h.mu.Unlock()
			return
		}
		batch := takeBatch(&s.queue)
		h.mu.Unlock()
		h.process(s, batch)
	}
}

// takeBatch removes the next unit of work: a replayed answer, a command, a
// pairing request, or every consecutive chat message (mid-turn messages join
// the next turn together).
func takeBatch(q *[]item) []item {
	first := (*q)[0]
	if first.answered || first.decision != channels.Allow || commandName(first.msg.Text) != "" {
		*q = (*q)[1:]
		return []item{first}
	}
	n := 1
	for n < len(*q) {
		it := (*q)[n]
		if it.answered || it.decision != channels.Allow || commandName(it.msg.Text) != "" {
			break
		}
		n++
	}
	batch := append([]item(nil), (*q)[:n]...)
	*q = (*q)[n:]
	return batch
}

func (h *Handler) process(s *session, batch []item) {
	if batch = h.recheckAccess(s, batch); len(batch) == 0 {
		return
	}
	first := batch[0]
	switch {
	case first.answered:
		h.replayAnswered(first, batch) // the answer, then the files without a receipt (sendfile.go)
	case first.decision == channels.NeedsPairing:
		h.pair(s, first)
	case commandName(first.msg.Text) != "":
		h.commands.Add(1)
		h.command(s, first)
	default:
		h.runTurn(s, batch)
	}
}

// stopSession cancels the running turn of key and drops its queued chat messages.
func (h *Handler) stopSession(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[key]
	if s == nil {
		return
	}
	if s.cancel != nil {
		s.stopped = true
		s.cancel()
	}
	var dropped []item
	kept := s.queue[:0]
	for _, it := range s.queue {
		if it.decision == channels.Allow && !it.answered && commandName(it.msg.Text) == "" {
			dropped = append(dropped, it)
			continue
		}
		kept = append(kept, it)
	}
	s.queue = kept
	if len(dropped) > 0 {
		h.workers.Add(1) // Close waits for it like for a session worker
		go func() {
			defer h.workers.Done()
			h.done(dropped)
		}()
	}
}
