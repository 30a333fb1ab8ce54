package ui

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// A turn's timeline as a picture (issue 34): a waterfall of bars on one time
// axis — each model call, each tool, the wait for an approval, the delivery —
// with their durations, drawn as inline SVG by the "waterfall" template of
// _turns.html (geometry attributes only: the CSP allows no inline style;
// colors come from the stylesheet's variables, so both themes work). The
// table of states stays behind it in a <details>.
//
// Where the times come from: model calls and tools from the agent's trace
// (kept for the turns of this process; a model call's bar ends when it was
// recorded and lasts its Elapsed, a tool's bar starts when its step began
// executing tools, as the step's tools run together); turns of an earlier
// process fall back to the stored messages' times. The session page adds
// what the store knows beside the turn: approval waits from the audit log
// (approval.request to its decision) and the delivery from the outbox (the
// first send intent to the last receipt). The wait in the chat's queue is
// drawn from the user message's time (when the hub accepted the message,
// agent.Request.Received) to the turn's start, before the axis's zero.

// Waterfall geometry (SVG user units).
const (
	wfWidth   = 640.0
	wfLabelW  = 170.0 // the label column
	wfTookW   = 64.0  // the duration column at the right
	wfRowH    = 18.0
	wfTop     = 16.0 // the axis labels
	wfBarH    = 12.0
	wfMaxRows = 60 // a turn with more steps shows the first ones and says so
)

// Waterfall lanes (the data-lane attribute and the bar's color class).
const (
	laneQueue    = "queue"
	laneModel    = "model"
	laneTool     = "tool"
	laneApproval = "approval"
	laneDelivery = "delivery"
)

// wfSpan is one bar before layout: offsets from the turn's start.
type wfSpan struct {
	Lane   string
	Label  string
	Start  time.Duration
	Took   time.Duration
	Detail string
	Error  string
}

// waterfall is a laid-out turn timeline.
type waterfall struct {
	Width, Height float64
	Total         time.Duration
	Rows          []wfRow
	Ticks         []wfTick
	More          int // spans not drawn (beyond wfMaxRows)
}

// wfRow is one bar with its place.
type wfRow struct {
	wfSpan
	X, W, Y, TextY float64
}

// wfTick is an axis mark.
type wfTick struct {
	X      float64
	Label  string
	Anchor string
}

// Fmt formats a coordinate for an SVG attribute.
func (waterfall) Fmt(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// LineBottom is where the axis lines end.
func (w waterfall) LineBottom() float64 { return w.Height - 2 }

// traceSpans are the bars of a traced turn.
func traceSpans(entries []agent.TraceEntry, started time.Time) []wfSpan {
	var out []wfSpan
	off := func(at time.Time) time.Duration {
		if at.IsZero() || started.IsZero() || at.Before(started) {
			return 0
		}
		return at.Sub(started)
	}
	var execStart time.Duration
	models := 0
	for _, e := range entries {
		switch e.Kind {
		case agent.TraceTransition:
			if strings.HasSuffix(e.To, "/"+string(agent.InnerToolExecuting)) {
				execStart = off(e.At)
			}
		case agent.TraceModel:
			models++
			s := wfSpan{Lane: laneModel, Label: "model call " + strconv.Itoa(models), Took: e.Elapsed,
				Detail: e.Observation, Error: e.Error}
			s.Start = max(off(e.At)-e.Elapsed, 0)
			out = append(out, s)
		case agent.TraceTool:
			s := wfSpan{Lane: laneTool, Label: e.Tool, Took: e.Elapsed, Detail: e.Args, Error: e.Error}
			if e.NoSuchTool {
				s.Label += " (no such tool)"
			}
			s.Start = execStart
			if at := off(e.At); s.Start == 0 || s.Start > at {
				s.Start = max(at-e.Elapsed, 0)
			}
			out = append(out, s)
		}
	}
	return out
}

// messageSpans are the bars of a turn without its trace: from one stored
// message to the next.
func messageSpans(steps []stepView) []wfSpan {
	out := make([]wfSpan, 0, len(steps))
	models := 0
	for _, st := range steps {
		s := wfSpan{Start: max(st.Offset-st.Elapsed, 0), Took: st.Elapsed}
		if name, ok := strings.CutPrefix(st.Label, "tool "); ok {
			s.Lane, s.Label = laneTool, name
		} else {
			models++
			s.Lane, s.Label, s.Detail = laneModel, "model call "+strconv.Itoa(models), strings.TrimPrefix(st.Label, "model: ")
		}
		out = append(out, s)
	}
	return out
}

// layoutWaterfall places spans on an axis as long as the turn (or the last
// bar's end, if later); nil when there is nothing to draw.
func layoutWaterfall(spans []wfSpan, turn time.Duration) *waterfall {
	if len(spans) == 0 {
		return nil
	}
	// A bar before the turn's start (the queue) moves the axis's origin
	// there: every offset is shifted by it.
	var origin time.Duration
	for _, s := range spans {
		origin = min(origin, s.Start)
	}
	if origin < 0 {
		shifted := make([]wfSpan, len(spans))
		for i, s := range spans {
			s.Start -= origin
			shifted[i] = s
		}
		spans, turn = shifted, turn-origin
	}
	w := &waterfall{Width: wfWidth, Total: turn}
	for _, s := range spans {
		w.Total = max(w.Total, s.Start+s.Took)
	}
	if len(spans) > wfMaxRows {
		w.More = len(spans) - wfMaxRows
		spans = spans[:wfMaxRows]
	}
	plotX, plotW := wfLabelW, wfWidth-wfLabelW-wfTookW
	total := float64(max(w.Total, time.Millisecond))
	x := func(d time.Duration) float64 { return plotX + float64(d)/total*plotW }
	for i, s := range spans {
		y := wfTop + float64(i)*wfRowH
		r := wfRow{wfSpan: s, X: x(s.Start), Y: y + (wfRowH-wfBarH)/2, TextY: y + wfRowH - 5}
		r.W = max(x(s.Start+s.Took)-r.X, 1.5) // an instant still shows
		r.X = min(r.X, plotX+plotW-r.W)
		w.Rows = append(w.Rows, r)
	}
	w.Height = wfTop + float64(len(w.Rows))*wfRowH + 4
	w.Ticks = []wfTick{{X: plotX, Label: "0", Anchor: "start"}, {X: plotX + plotW/2, Label: fmtDur(w.Total / 2), Anchor: "middle"},
		{X: plotX + plotW, Label: fmtDur(w.Total), Anchor: "end"}}
	return w
}

// addStoreSpans draws, on the session page, what the store keeps beside the
// turns of session key: approval waits (audit) and deliveries (outbox). A
// read that fails is logged and leaves the waterfalls as they were.
func (s *Server) addStoreSpans(ctx context.Context, key string, views []turnView) {
	if len(views) == 0 {
		return
	}
	st := s.o.Backend.Store()
	waits := s.approvalWaits(ctx, st, key, views[0].Started)
	for i := range views {
		v := &views[i]
		end := v.Started.Add(v.Duration)
		extra := false
		for _, a := range waits {
			if !a.from.Before(v.Started) && (v.Duration == 0 || !a.from.After(end)) {
				v.spans = append(v.spans, wfSpan{Lane: laneApproval, Label: "approval wait", Start: a.from.Sub(v.Started),
					Took: max(a.to.Sub(a.from), 0), Detail: a.detail, Error: a.err})
				extra = true
			}
		}
		if d, ok := s.deliverySpan(ctx, st, *v); ok {
			v.spans = append(v.spans, d)
			extra = true
		}
		if extra {
			v.Waterfall = layoutWaterfall(v.spans, v.Duration)
		}
	}
}

// approvalWait is one approval.request and the decision that ended it.
type approvalWait struct {
	from, to    time.Time
	detail, err string
}

// approvalScan bounds the audit records read for a session page.
const approvalScan = 2000

func (s *Server) approvalWaits(ctx context.Context, st memory.Audit, key string, since time.Time) []approvalWait {
	recs, err := st.ListAudit(ctx, memory.AuditFilter{Session: key, Since: since, Limit: approvalScan})
	if err != nil {
		s.log.Warn("read the audit log for the turn timeline", "session", key, "err", err)
		return nil
	}
	var out []approvalWait
	open := -1
	for i := len(recs) - 1; i >= 0; i-- { // oldest first
		r := recs[i]
		switch {
		case r.Action == "approval.request":
			out = append(out, approvalWait{from: r.Time, to: r.Time, detail: r.Detail})
			open = len(out) - 1
		case open >= 0 && strings.HasPrefix(r.Action, "approval."):
			w := &out[open]
			w.to = r.Time
			w.detail = strings.TrimSpace(w.detail + " · " + strings.TrimPrefix(r.Action, "approval.") + " by " + r.Actor)
			if r.Action != "approval.approve" {
				w.err = strings.TrimPrefix(r.Action, "approval.")
			}
			open = -1
		}
	}
	return out
}

// deliverySpan is the turn's delivery: its first send intent to its last
// receipt (to now while a chunk is still pending).
func (s *Server) deliverySpan(ctx context.Context, st memory.Outbox, v turnView) (wfSpan, bool) {
	recs, err := st.OutboxForTurn(ctx, v.ID)
	if err != nil {
		s.log.Warn("read the outbox for the turn timeline", "turn", v.ID, "err", err)
		return wfSpan{}, false
	}
	if len(recs) == 0 || v.Started.IsZero() {
		return wfSpan{}, false
	}
	from, to := recs[0].Created, recs[0].Updated
	failed, pending := 0, 0
	for _, r := range recs {
		if r.Created.Before(from) {
			from = r.Created
		}
		switch r.Status {
		case memory.OutboxPending:
			pending++
			to = s.o.Now()
		case memory.OutboxFailed:
			failed++
		}
		if pending == 0 && r.Updated.After(to) {
			to = r.Updated
		}
	}
	label := "delivery"
	if len(recs) > 1 {
		label += " (" + strconv.Itoa(len(recs)) + " parts)"
	}
	sp := wfSpan{Lane: laneDelivery, Label: label, Start: max(from.Sub(v.Started), 0), Took: max(to.Sub(from), 0)}
	switch {
	case failed > 0:
		sp.Error = strconv.Itoa(failed) + " failed"
	case pending > 0:
		sp.Detail = strconv.Itoa(pending) + " still pending"
	}
	return sp, true
}

// queueSpan is the wait in the chat's queue before the turn started: from
// the turn's first user message (stamped when the hub accepted it) to the
// turn's start; false when it did not wait.
func queueSpan(t memory.Turn) (wfSpan, bool) {
	for _, m := range t.Messages {
		if m.Role != memory.RoleUser {
			continue
		}
		if m.Time.IsZero() || !m.Time.Before(t.Started) {
			return wfSpan{}, false
		}
		wait := t.Started.Sub(m.Time)
		return wfSpan{Lane: laneQueue, Label: "queue", Start: -wait, Took: wait,
			Detail: "waited for the chat's previous turn or a free turn slot"}, true
	}
	return wfSpan{}, false
}
