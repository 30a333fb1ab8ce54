package schedule

import (
	"testing"
	"time"
)

func TestActiveHours(t *testing.T) {
	s, e, err := ParseActiveHours("22:30-06:00")
	if err != nil || s != 22*60+30 || e != 360 {
		t.Fatalf("ParseActiveHours = %d %d %v", s, e, err)
	}
	for _, tt := range []struct {
		m    int
		want bool
	}{{23 * 60, true}, {0, true}, {359, true}, {360, false}, {12 * 60, false}, {22*60 + 30, true}} {
		if got := InActiveHours(s, e, tt.m); got != tt.want {
			t.Errorf("InActiveHours(22:30-06:00, %d) = %v", tt.m, got)
		}
	}
	s, e, _ = ParseActiveHours("09:00-21:00")
	if !InActiveHours(s, e, 9*60) || InActiveHours(s, e, 21*60) || InActiveHours(s, e, 8*60+59) {
		t.Error("InActiveHours(09:00-21:00)")
	}
}

func TestParseScheduleUsesLocation(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata")
	}
	s, err := Parse("0 9 * * *", berlin)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2025, 3, 30, 0, 0, 0, 0, time.UTC) // DST starts in Berlin that day
	next := s.Next(from)
	if got := next.In(berlin); got.Hour() != 9 || got.Day() != 30 {
		t.Errorf("next = %v", got)
	}
	if next.UTC().Hour() != 7 {
		t.Errorf("9:00 CEST should be 07:00 UTC, got %v", next.UTC())
	}
}

func TestParseRefusesTZPrefixAndBadSpecs(t *testing.T) {
	for _, bad := range []string{"TZ=UTC 0 9 * * *", "CRON_TZ=UTC @daily", "0 * * *", "61 * * * *", "@sometimes"} {
		if _, err := Parse(bad, time.UTC); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	if _, _, err := ParseActiveHours("09:00-09:00"); err == nil {
		t.Error("equal start and end accepted")
	}
}
