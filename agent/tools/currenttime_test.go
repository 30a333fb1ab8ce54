package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // hermetic zone data, whatever the host has installed
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func TestCurrentTimeZones(t *testing.T) {
	instant := time.Date(2025, 3, 9, 13, 5, 6, 0, time.UTC) // the morning US DST starts
	tool := NewCurrentTime(mustZone(t, "Europe/Berlin"), func() time.Time { return instant })
	tests := []struct {
		name string
		args string
		want string
	}{
		{"default zone, no args", `{}`, "2025-03-09T14:05:06+01:00 (Sunday, 9 March 2025, 14:05:06 in Europe/Berlin, CET, UTC+01:00)"},
		{"default zone, null args", `null`, "2025-03-09T14:05:06+01:00 (Sunday, 9 March 2025, 14:05:06 in Europe/Berlin, CET, UTC+01:00)"},
		{"default zone, empty timezone", `{"timezone":""}`, "2025-03-09T14:05:06+01:00 (Sunday, 9 March 2025, 14:05:06 in Europe/Berlin, CET, UTC+01:00)"},
		{"named zone after DST start", `{"timezone":"America/New_York"}`, "2025-03-09T09:05:06-04:00 (Sunday, 9 March 2025, 09:05:06 in America/New_York, EDT, UTC-04:00)"},
		{"half-hour offset", `{"timezone":"Asia/Kolkata"}`, "2025-03-09T18:35:06+05:30 (Sunday, 9 March 2025, 18:35:06 in Asia/Kolkata, IST, UTC+05:30)"},
		{"negative offset crossing the date", `{"timezone":"Pacific/Honolulu"}`, "2025-03-09T03:05:06-10:00 (Sunday, 9 March 2025, 03:05:06 in Pacific/Honolulu, HST, UTC-10:00)"},
		{"next day east of UTC", `{"timezone":"Pacific/Kiritimati"}`, "2025-03-10T03:05:06+14:00 (Monday, 10 March 2025, 03:05:06 in Pacific/Kiritimati, +14, UTC+14:00)"},
		{"UTC", `{"timezone":"UTC"}`, "2025-03-09T13:05:06Z (Sunday, 9 March 2025, 13:05:06 in UTC, UTC, UTC+00:00)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tool.Call(context.Background(), json.RawMessage(tc.args))
			if err != nil {
				t.Fatalf("Call(%s): %v", tc.args, err)
			}
			if got != tc.want {
				t.Errorf("Call(%s)\n got %q\nwant %q", tc.args, got, tc.want)
			}
		})
	}
}

func TestCurrentTimeFollowsInjectedClockAndNilDefaults(t *testing.T) {
	now := time.Date(2024, 12, 31, 23, 59, 59, 0, time.UTC)
	tool := NewCurrentTime(nil, func() time.Time { return now })
	first, err := tool.Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2024-12-31T23:59:59Z (Tuesday, 31 December 2024, 23:59:59 in UTC, UTC, UTC+00:00)"; first != want {
		t.Errorf("nil location: got %q, want %q", first, want)
	}
	now = now.Add(time.Second)
	second, err := tool.Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(second, "2025-01-01T00:00:00Z (Wednesday, 1 January 2025") {
		t.Errorf("after the clock moved: got %q", second)
	}
	if !tool.Repeatable() || tool.Name() != "current_time" {
		t.Errorf("Repeatable=%v Name=%q", tool.Repeatable(), tool.Name())
	}
	if !strings.Contains(tool.Description(), "UTC") {
		t.Errorf("description does not name the default zone: %q", tool.Description())
	}
}

func TestCurrentTimeErrors(t *testing.T) {
	tool := NewCurrentTime(time.UTC, func() time.Time { return time.Unix(0, 0) })
	tests := []struct {
		args string
		want string
	}{
		{`{"timezone":"Mars/Olympus_Mons"}`, `current_time: unknown time zone "Mars/Olympus_Mons": use an IANA name`},
		{`{"timezone":"Local"}`, `current_time: unknown time zone "Local"`},
		{`{"timezone":"../../etc/passwd"}`, `current_time: unknown time zone "../../etc/passwd"`},
		{`{"timezone":42}`, `current_time: invalid arguments`},
		{`{"tz":"UTC"}`, `current_time: invalid arguments: json: unknown field "tz"`},
		{`[1]`, `current_time: invalid arguments`},
	}
	for _, tc := range tests {
		got, err := tool.Call(context.Background(), json.RawMessage(tc.args))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Call(%s) = %q, %v; want error containing %q", tc.args, got, err, tc.want)
		}
	}
}
