package daemon

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// NewAgent builds the agent from config: the model endpoint, the loop's
// limits and the built-in tools enabled in agent.tools.
func NewAgent(cfg *config.Config, sessions agent.Sessions, log *slog.Logger, client *http.Client) (*agent.Agent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg, err := toolRegistry(cfg, log)
	if err != nil {
		return nil, err
	}
	temp := cfg.LLM.Temperature
	a, err := agent.New(agent.Options{
		BaseURL:           cfg.LLM.BaseURL,
		APIKey:            cfg.LLM.APIKey.Value(),
		Model:             cfg.LLM.Model,
		Temperature:       &temp,
		MaxTokens:         cfg.LLM.MaxTokens,
		Timeout:           cfg.LLM.Timeout,
		MaxRetries:        retries(cfg.LLM.MaxRetries),
		ToolProtocol:      cfg.LLM.ToolProtocol,
		MaxIterations:     cfg.Agent.MaxIterations,
		MaxToolCalls:      cfg.Agent.MaxToolCalls,
		ToolRetries:       retries(cfg.Agent.ToolRetries),
		ToolRetryDelay:    cfg.Agent.ToolRetryDelay,
		ToolTimeout:       cfg.Agent.ToolTimeout,
		ObservationMaxLen: cfg.Agent.ObservationMaxLen,
		MaxHistory:        cfg.Agent.MaxHistory,
		TokenBudget:       cfg.Agent.TokenBudget,
		TurnTimeout:       cfg.Agent.TurnTimeout,
		Location:          cfg.Bot.Location(),
		HTTPClient:        client,
		Logger:            log,
		Sessions:          sessions,
		Tools:             reg,
	})
	if err != nil {
		return nil, fmt.Errorf("build the agent: %w", err)
	}
	return a, nil
}

// retries maps a configured count where 0 means "none" to the agent's
// convention (0 = default, negative = none).
func retries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func toolRegistry(cfg *config.Config, log *slog.Logger) (*agent.Registry, error) {
	reg := agent.NewRegistry()
	wf := cfg.Agent.WebFetch
	builtins, err := tools.New(tools.Options{
		Location: cfg.Bot.Location(),
		Logger:   log,
		WebFetch: tools.WebFetchConfig{AllowDomains: wf.AllowDomains, MaxBytes: int64(wf.MaxBytes),
			AllowPrivate: wf.AllowPrivate, Logger: log},
	})
	if err != nil {
		return nil, fmt.Errorf("agent.web_fetch: %w", err)
	}
	for _, t := range builtins {
		if !slices.Contains(cfg.Agent.Tools, t.Name()) {
			continue
		}
		if err := reg.Register(t); err != nil {
			return nil, fmt.Errorf("register tool %s: %w", t.Name(), err)
		}
	}
	return reg, nil
}
