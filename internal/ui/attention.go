package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// What needs the operator's attention (issue 34): the tool calls waiting for
// approval and the pairing codes waiting for a decision, as badges in the
// navigation of every page. The page renders the counts it has; a Server-Sent
// Events stream (/ui/live/attention, app.js) updates them while the page is
// open, sending a new event only when a count changed.

// attention is the badges' counts.
type attention struct {
	Pairing   int `json:"pairing"`
	Approvals int `json:"approvals"`
}

// Total is what the collapsed menu's button shows.
func (a attention) Total() int { return a.Pairing + a.Approvals }

// attention counts what waits now. A store that cannot list the pairing
// codes is logged and counted as none: a badge never breaks a page.
func (s *Server) attention(ctx context.Context) attention {
	a := attention{Approvals: len(s.o.Backend.Approvals())}
	reqs, err := s.o.Backend.PendingPairings(ctx)
	if err != nil {
		s.log.Warn("count pairing codes for the navigation", "err", err)
	}
	a.Pairing = len(reqs)
	return a
}

// attentionStream sends the counts as JSON ({"pairing":1,"approvals":0},
// event "attention") at once and whenever they change, checking every
// LiveInterval.
func (s *Server) attentionStream(w http.ResponseWriter, r *http.Request) {
	sse, ok := s.startSSE(w)
	if !ok {
		return
	}
	t := time.NewTicker(s.o.LiveInterval)
	defer t.Stop()
	last := attention{Pairing: -1}
	for {
		if a := s.attention(r.Context()); a != last {
			b, err := json.Marshal(a)
			if err != nil {
				return
			}
			if sse.send("attention", string(b)) != nil {
				return
			}
			last = a
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
	}
}
