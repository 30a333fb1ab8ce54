package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/switchboard-bot/switchboard/agent"
)

// currentTimeArgs are current_time's arguments; its schema is generated from them.
type currentTimeArgs struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone name such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\". Omit it for the bot's own time zone."`
}

var currentTimeSchema = sync.OnceValue(func() json.RawMessage {
	return agent.MustArgsSchema[currentTimeArgs](func(p map[string]*jsonschema.Schema) {
		p["timezone"].MaxLength = jsonschema.Ptr(64)
	})
})

// CurrentTime is the current_time tool: it tells the current date and time
// in the default zone or in a named IANA zone.
type CurrentTime struct {
	loc *time.Location
	now func() time.Time
}

var (
	_ agent.Tool       = (*CurrentTime)(nil)
	_ agent.Repeatable = (*CurrentTime)(nil)
)

// NewCurrentTime returns the current_time tool. loc is the zone used when the
// model names none (nil means UTC); now is the clock (nil means time.Now).
func NewCurrentTime(loc *time.Location, now func() time.Time) *CurrentTime {
	if loc == nil {
		loc = time.UTC
	}
	if now == nil {
		now = time.Now
	}
	return &CurrentTime{loc: loc, now: now}
}

// Name implements agent.Tool.
func (t *CurrentTime) Name() string { return NameCurrentTime }

// Description implements agent.Tool.
func (t *CurrentTime) Description() string {
	return "Get the current date, time and weekday. Without arguments it answers in the bot's time zone (" +
		t.loc.String() + "); pass \"timezone\" (an IANA name such as \"Asia/Tokyo\") for another zone."
}

// Schema implements agent.Tool.
func (t *CurrentTime) Schema() json.RawMessage { return currentTimeSchema() }

// Repeatable implements agent.Repeatable: reading the clock has no effects.
func (t *CurrentTime) Repeatable() bool { return true }

// Call implements agent.Tool. The answer is one line, for example
//
//	2025-03-09T14:05:06+01:00 (Sunday, 9 March 2025, 14:05:06 in Europe/Berlin, CET, UTC+01:00)
func (t *CurrentTime) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var a currentTimeArgs
	if err := decodeArgs(args, &a); err != nil {
		return "", fmt.Errorf("current_time: %w", err)
	}
	loc := t.loc
	if name := strings.TrimSpace(a.Timezone); name != "" {
		l, err := loadZone(name)
		if err != nil {
			return "", fmt.Errorf("current_time: %w", err)
		}
		loc = l
	}
	return formatTime(t.now().In(loc), loc), nil
}

// loadZone loads an IANA zone. "Local" and file paths are refused: the first
// would reveal the host's setting instead of the bot's configured zone.
func loadZone(name string) (*time.Location, error) {
	if strings.EqualFold(name, "local") {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as \"Europe/Berlin\", or omit timezone for the bot's own zone", name)
	}
	if strings.EqualFold(name, "utc") || strings.EqualFold(name, "gmt") || name == "Z" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as \"Europe/Berlin\" or \"America/New_York\"", name)
	}
	return loc, nil
}

func formatTime(t time.Time, loc *time.Location) string {
	abbr, off := t.Zone()
	sign := '+'
	if off < 0 {
		sign = '-'
		off = -off
	}
	offset := fmt.Sprintf("UTC%c%02d:%02d", sign, off/3600, off%3600/60)
	return fmt.Sprintf("%s (%s, %d %s %d, %s in %s, %s, %s)",
		t.Format(time.RFC3339), t.Weekday(), t.Day(), t.Month(), t.Year(),
		t.Format("15:04:05"), loc.String(), abbr, offset)
}

// decodeArgs decodes a tool's argument object strictly: unknown fields are
// errors (the agent validates against the schema first; this is the second
// line). Empty input and null mean "no arguments".
func decodeArgs(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("invalid arguments: trailing data after the JSON object")
	}
	return nil
}
