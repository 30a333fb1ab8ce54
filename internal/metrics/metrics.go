// Package metrics owns Switchboard's Prometheus metrics: what the handler,
// the outbound path, the agent and the scheduler report, registered on a
// registry of its own (no global state) and served at /metrics.
package metrics

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/memory"
)

// Metrics holds the collectors. Its methods are safe for concurrent use and
// implement the observer hooks of hub.Handler and hub.Outbound.
type Metrics struct {
	reg *prometheus.Registry

	messagesIn   *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	messagesOut  *prometheus.CounterVec
	turns        *prometheus.CounterVec
	turnSeconds  *prometheus.HistogramVec
	modelCalls   *prometheus.CounterVec
	failovers    *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	toolCalls    *prometheus.CounterVec
	toolErrors   *prometheus.CounterVec
	deliveries   *prometheus.CounterVec
	scheduleRuns *prometheus.CounterVec
	storageFails *prometheus.CounterVec
	modelTokens  *prometheus.CounterVec // by model and kind (budgets, issue 30)
	refusals     *prometheus.CounterVec
	storageOK    prometheus.Gauge
}

// New creates the metrics on a fresh registry (with Go and process collectors).
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		reg: reg,
		messagesIn: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_messages_in_total",
			Help: "Platform messages received, by channel."}, []string{"channel"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_messages_dropped_total",
			Help: "Messages not answered, by channel and reason (duplicate, ignored, denied, busy)."}, []string{"channel", "reason"}),
		messagesOut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_messages_out_total",
			Help: "Message chunks delivered to platforms, by channel."}, []string{"channel"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_turns_total",
			Help: "Agent turns, by channel and finish reason (error when the turn failed)."}, []string{"channel", "finish"}),
		turnSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_turn_duration_seconds",
			Help:    "Duration of agent turns, by channel.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2, 5, 10, 20, 40, 80}}, []string{"channel"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_model_calls_total",
			Help: "Model calls (each with its retries), by endpoint (primary, fallback 1, …), model and outcome (ok, failed, refused, canceled)."},
			[]string{"endpoint", "model", "outcome"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_model_failovers_total",
			Help: "Model calls handed to the next endpoint after a transient failure, by the endpoint that failed and the one asked next."},
			[]string{"from", "to"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_model_tokens_total",
			Help: "Model tokens used, by kind (prompt, completion)."}, []string{"kind"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_tool_calls_total",
			Help: "Tool calls, by tool."}, []string{"tool"}),
		toolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_tool_errors_total",
			Help: "Tool calls that ended in an error, by tool."}, []string{"tool"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_deliveries_total",
			Help: "Delivery outcomes beyond plain success: retried, failed, resent (after a crash mid-send)."}, []string{"outcome"}),
		scheduleRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_scheduled_runs_total",
			Help: "Heartbeat greetings and job runs, by kind and status."}, []string{"kind", "status"}),
		storageFails: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_storage_write_failures_total",
			Help: "Failed writes to the data store (disk full, read-only, I/O error), by operation; each retry counts."}, []string{"op"}),
		storageOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_storage_healthy",
			Help: "1 while writes to the data store work, 0 while they fail (messages then stay pending and are retried)."}),
	}
	m.modelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_tokens_total",
		Help: "Model tokens used by every turn (chat, job, heartbeat), by model and kind (prompt, completion)."}, []string{"model", "kind"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_budget_refusals_total",
		Help: "Model calls refused by llm.budget, by scope (chat: a chat's daily tokens, daily: everyone's)."}, []string{"scope"})
	reg.MustRegister(m.modelTokens, m.refusals)
	m.storageOK.Set(1)
	reg.MustRegister(m.messagesIn, m.dropped, m.messagesOut, m.turns, m.turnSeconds, m.modelCalls, m.failovers, m.tokens,
		m.toolCalls, m.toolErrors, m.deliveries, m.scheduleRuns, m.storageFails, m.storageOK)
	return m
}

// Gauge registers a gauge read at scrape time (queue depth, active sessions).
func (m *Metrics) Gauge(name, help string, read func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, read))
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry exposes the registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// MessageIn counts an inbound platform message.
func (m *Metrics) MessageIn(channel string) { m.messagesIn.WithLabelValues(channel).Inc() }

// MessageDropped counts a message that will not be answered.
func (m *Metrics) MessageDropped(channel, reason string) {
	m.dropped.WithLabelValues(channel, reason).Inc()
}

// ChunkSent counts a delivered chunk.
func (m *Metrics) ChunkSent(channel string) { m.messagesOut.WithLabelValues(channel).Inc() }

// Delivery counts a retried, failed or resent delivery.
func (m *Metrics) Delivery(outcome string) { m.deliveries.WithLabelValues(outcome).Inc() }

// ModelCall counts one endpoint asked by the agent (agent.Options.OnModelCall)
// and, when it was asked after another failed, the failover.
func (m *Metrics) ModelCall(c agent.ModelCall) {
	m.modelCalls.WithLabelValues(c.Endpoint, c.Model, c.Outcome).Inc()
	if c.From != "" {
		m.failovers.WithLabelValues(c.From, c.Endpoint).Inc()
	}
}

// TurnDone records a finished turn: its latency, tokens and tools (model
// calls are counted as they happen: ModelCall).
func (m *Metrics) TurnDone(channel string, res agent.Result, err error, d time.Duration) {
	finish := string(res.FinishReason)
	if err != nil {
		finish = "error"
	}
	if finish == "" {
		finish = "unknown"
	}
	m.turns.WithLabelValues(channel, finish).Inc()
	m.turnSeconds.WithLabelValues(channel).Observe(d.Seconds())
	m.tokens.WithLabelValues("prompt").Add(float64(res.Usage.PromptTokens))
	m.tokens.WithLabelValues("completion").Add(float64(res.Usage.CompletionTokens))
	for _, e := range res.Trace {
		switch e.Kind {
		case agent.TraceTool:
			tool := e.Tool
			if e.NoSuchTool {
				tool = "unknown" // the model's text: one label, not one per name it makes up
			}
			m.toolCalls.WithLabelValues(tool).Inc()
			if e.Error != "" {
				m.toolErrors.WithLabelValues(tool).Inc()
			}
		}
	}
}

// ScheduledRun counts a heartbeat greeting or job run.
func (m *Metrics) ScheduledRun(kind, status string) {
	m.scheduleRuns.WithLabelValues(kind, status).Inc()
}

// StorageFailure counts a failed write to the data store. op is the kind of
// write; a turn id or similar suffix after the first word group is dropped so
// the label set stays small.
func (m *Metrics) StorageFailure(op string) {
	m.storageFails.WithLabelValues(storageOpLabel(op)).Inc()
}

// StorageHealthy sets switchboard_storage_healthy.
func (m *Metrics) StorageHealthy(ok bool) {
	if ok {
		m.storageOK.Set(1)
		return
	}
	m.storageOK.Set(0)
}

// storageOpLabel maps "commit turn in-42" to "commit turn": labels must not
// carry ids.
func storageOpLabel(op string) string {
	for _, known := range []string{"accept message", "commit turn", "record delivery", "clear inbox", "save pairing request", "probe write"} {
		if strings.HasPrefix(op, known) {
			return known
		}
	}
	return "other"
}

// Tokens counts a turn's tokens per model (agent.Options.OnUsage).
func (m *Metrics) Tokens(models []memory.ModelUsage) {
	for _, u := range models {
		m.modelTokens.WithLabelValues(u.Model, "prompt").Add(float64(u.Usage.PromptTokens))
		m.modelTokens.WithLabelValues(u.Model, "completion").Add(float64(u.Usage.CompletionTokens))
	}
}

// BudgetRefusal counts a model call refused by llm.budget ("chat" or
// "daily"; no chat label: that would grow without bound).
func (m *Metrics) BudgetRefusal(scope string) { m.refusals.WithLabelValues(scope).Inc() }
