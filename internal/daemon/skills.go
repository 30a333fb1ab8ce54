package daemon

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/skills"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// searchAndSkills builds the web_search tool (when agent.tools enables it)
// and the skill tool over skills.dir (re-read when its files change).
func searchAndSkills(cfg *config.Config, log *slog.Logger) ([]agent.Tool, error) {
	var out []agent.Tool
	if slices.Contains(cfg.Agent.Tools, tools.NameWebSearch) {
		ws := cfg.Agent.WebSearch
		t, err := tools.NewWebSearch(tools.WebSearchConfig{Provider: ws.Provider, URL: ws.URL,
			APIKey: ws.APIKey.Value(), MaxResults: ws.MaxResults, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("agent.web_search: %w", err)
		}
		out = append(out, t)
	}
	lib := skills.NewLibrary(cfg.ResolvePath(cfg.Skills.Dir), skills.Options{Logger: log})
	if n := len(lib.Skills()); n > 0 { // the first read logs malformed files (file:line)
		log.Info("skills loaded", "dir", lib.Dir(), "skills", n)
	}
	out = append(out, skills.NewTool(lib, skillPageChars(cfg.Agent.ObservationMaxLen)))
	return out, nil
}

// skillPageChars keeps a page of a skill, with its header and continuation
// note, under the observation limit so the agent never cuts it.
func skillPageChars(observationMaxLen int) int {
	const overhead = 300 // the header line and the continuation note
	if observationMaxLen <= 0 {
		return skills.DefaultPageChars
	}
	return max(500, observationMaxLen-overhead)
}
