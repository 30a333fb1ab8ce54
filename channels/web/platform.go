package web

import "github.com/switchboard-bot/switchboard/channels/platform"

// Config is the channels.web section of config.yaml: the web console's chat
// channel (served under /ui/ when server.ui is on; its user is the
// logged-in operator, never gated). Enabled defaults to true; the channel
// runs only while server.ui is on too.
type Config struct {
	Enabled bool `yaml:"enabled"`
}

// IsEnabled implements platform.Section.
func (c *Config) IsEnabled() bool { return c.Enabled }

// Platform describes the web chat to the registry (internal/platforms). It
// has no constructor: the daemon builds it with the web console.
var Platform = platform.Descriptor{
	Name:    Name,
	Section: func() platform.Section { return &Config{Enabled: true} },
	Hint:    "Web console: Markdown is rendered (no raw HTML); code blocks, lists and links are fine.",
}

// ConfigIn returns this platform's section of s.
func ConfigIn(s platform.Sections) *Config { return platform.Get[*Config](s, Name) }
