package console

import "github.com/switchboard-bot/switchboard/channels/platform"

// Config is the channels.console section of config.yaml.
type Config struct {
	Enabled bool `yaml:"enabled"`
}

// IsEnabled implements platform.Section.
func (c *Config) IsEnabled() bool { return c.Enabled }

// Platform describes the console to the registry (internal/platforms). It
// has no constructor: the daemon builds the terminal, which belongs to its
// standard input and output.
var Platform = platform.Descriptor{
	Name:    Name,
	Section: func() platform.Section { return &Config{Enabled: true} },
	Hint:    "Terminal: plain text with light Markdown.",
}

// ConfigIn returns this platform's section of s.
func ConfigIn(s platform.Sections) *Config { return platform.Get[*Config](s, Name) }
