package ui

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/config"
)

type channelRow struct {
	ChannelState
	LastEvent time.Time
}

// recentTurns is how many of the last turns the overview lists with the
// models that answered them.
const recentTurns = 10

type overviewData struct {
	Channels         []channelRow
	Model, Endpoint  string
	KeySet           bool
	TurnsPerMinute   int
	TurnsLastHour    int
	QueueDepth       int
	Retried, Failed  float64
	Resent           float64
	HourTurns, HourL template.HTML
	DayTurns, DayL   template.HTML
	Days             template.HTML // tokens per day (history.go)
	Updated          time.Time
	Cluster          *clusterView // nil on a single host
	// Endpoints are the model endpoints (primary, fallbacks) and their
	// state; Recent the last turns and the models that answered them
	// (this process's and, after a restart, the store's: recent.go).
	Endpoints []agent.EndpointStatus
	Recent    []TurnTrace
}

func (s *Server) overviewData(ctx context.Context) overviewData {
	s.backfill(ctx) // the turns of before this process, once (history.go)
	b := s.o.Backend
	cfg := b.Config()
	d := overviewData{Model: cfg.LLM.Model, Endpoint: config.RedactURL(cfg.LLM.BaseURL), KeySet: cfg.LLM.APIKey.IsSet(),
		QueueDepth: b.QueueDepth(), Updated: s.o.Now(), Cluster: s.clusterData(ctx), Endpoints: b.ModelEndpoints(),
		Recent: s.recentTurnsOf(ctx, recentTurns)}
	if d.Endpoint == "" {
		d.Endpoint = "OpenAI"
	}
	for _, c := range b.Channels() {
		d.Channels = append(d.Channels, channelRow{ChannelState: c, LastEvent: s.o.Stats.LastEvent(c.Name)})
	}
	st := s.o.Stats
	d.TurnsPerMinute = st.TurnsLastMinutes(1)
	d.TurnsLastHour = st.TurnsLastMinutes(60)
	dl := b.Deliveries()
	d.Retried, d.Failed, d.Resent = dl["retried"], dl["failed"], dl["resent"]
	hour := st.Series(60, 1)
	day := st.Series(96, 15)
	d.HourTurns = chart("chart-hour-turns", "turns per minute, last hour", hour, turnsOf, countLabel, true, hourAxis)
	d.HourL = chart("chart-hour-latency", "average latency per minute, last hour", hour, latencyOf, secondsLabel, false, hourAxis)
	d.DayTurns = chart("chart-day-turns", "turns per 15 minutes, last day", day, turnsOf, countLabel, true, dayAxis)
	d.DayL = chart("chart-day-latency", "average latency per 15 minutes, last day", day, latencyOf, secondsLabel, false, dayAxis)
	d.Days = s.daysChart(ctx)
	return d
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "overview", s.overviewData(r.Context()))
}

// overviewStream sends the live part of the overview every LiveInterval.
func (s *Server) overviewStream(w http.ResponseWriter, r *http.Request) {
	sse, ok := s.startSSE(w)
	if !ok {
		return
	}
	t := time.NewTicker(s.o.LiveInterval)
	defer t.Stop()
	for {
		html, err := s.fragment("overview", "live", s.overviewData(r.Context()))
		if err != nil {
			s.log.Error("render overview", "err", err)
			return
		}
		if sse.send("overview", html) != nil {
			return
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

// sseWriter writes Server-Sent Events.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func (s *Server) startSSE(w http.ResponseWriter) (*sseWriter, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sseWriter{w: w, f: f}, true
}

// send writes one event; data may span lines.
func (e *sseWriter) send(event, data string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "event: %s\n", event)
	for _, line := range strings.Split(data, "\n") {
		b.WriteString("data: ")
		b.WriteString(strings.ReplaceAll(line, "\r", ""))
		b.WriteString("\n")
	}
	b.WriteString("\n")
	if _, err := e.w.Write([]byte(b.String())); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}
