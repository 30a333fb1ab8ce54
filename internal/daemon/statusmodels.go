package daemon

import (
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// modelEndpoints is the state of the agent's model endpoints (the primary,
// llm.fallbacks, those only personas use): which answered last, which are
// down or cooling down. Errors go through redact.Text; URLs are redacted
// by the agent; keys are never part of it.
func (d *Daemon) modelEndpoints() []agent.EndpointStatus {
	a := d.agent.p.Load()
	if a == nil {
		return nil
	}
	eps := a.Endpoints()
	for i := range eps {
		eps[i].LastError = redact.Text(eps[i].LastError)
	}
	return eps
}

// modelEndpointFacts are /status's lines about the model endpoints, one
// per endpoint: "model endpoint fallback 1 (llama3.1 at http://…): up, last
// answered 2026-01-02 15:04:05 UTC by llama3.1".
func (d *Daemon) modelEndpointFacts() string {
	var b strings.Builder
	for _, e := range d.modelEndpoints() {
		model := e.Model
		if model == "" {
			model = "the turn's model"
		}
		where := model
		if e.BaseURL != "" && e.Name != "primary" {
			where += " at " + e.BaseURL
		}
		fmt.Fprintf(&b, "model endpoint %s (%s): %s", e.Name, where, e.State)
		switch e.State {
		case agent.StateCoolingDown:
			fmt.Fprintf(&b, " since %s, skipped until %s", stamp(e.DownSince), stamp(e.CoolingUntil))
		case agent.StateDown:
			fmt.Fprintf(&b, " since %s, asked again by the next turn", stamp(e.DownSince))
		}
		if e.LastAnswered.IsZero() {
			b.WriteString(", has not answered yet")
		} else {
			fmt.Fprintf(&b, ", last answered %s by %s", stamp(e.LastAnswered), e.LastModel)
		}
		if e.LastError != "" {
			fmt.Fprintf(&b, "; last error: %s", e.LastError)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
