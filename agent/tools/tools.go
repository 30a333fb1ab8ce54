package tools

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
)

// Tool names as the model sees them.
const (
	NameCurrentTime = "current_time"
	NameWebFetch    = "web_fetch"
)

// Options configures New.
type Options struct {
	// Location is current_time's default zone (bot.timezone); nil means UTC.
	Location *time.Location
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// WebFetch configures web_fetch.
	WebFetch WebFetchConfig
	// Logger receives debug records of fetches; nil discards. It is used
	// when WebFetch.Logger is nil.
	Logger *slog.Logger
}

// New builds every built-in tool of this package: current_time and web_fetch,
// in that order. It fails only if opts.WebFetch is invalid.
func New(opts Options) ([]agent.Tool, error) {
	wcfg := opts.WebFetch
	if wcfg.Logger == nil {
		wcfg.Logger = opts.Logger
	}
	wf, err := NewWebFetch(wcfg)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	return []agent.Tool{NewCurrentTime(opts.Location, opts.Now), wf}, nil
}
