package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
)

func TestLineDiff(t *testing.T) {
	cases := []struct {
		name, a, b string
		want       string // ops and texts, one per line
	}{
		{"one value", "a: 1\nb: 2\nc: 3\n", "a: 1\nb: 5\nc: 3\n", "  a: 1\n- b: 2\n+ b: 5\n  c: 3"},
		{"added line", "a\nb\n", "a\nx\nb\n", "  a\n+ x\n  b"},
		{"context cut", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nX\n6\n7\n8\n9\n", "…\n  4\n- 5\n+ X\n  6\n…"},
		{"no change", "a\n", "a\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := 1
			if tc.name != "context cut" {
				ctx = 3
			}
			var lines []string
			for _, l := range lineDiff(tc.a, tc.b, ctx) {
				if l.Op == "…" {
					lines = append(lines, "…")
					continue
				}
				lines = append(lines, l.Op+" "+l.Text)
			}
			got := strings.Join(lines, "\n")
			if got != tc.want {
				t.Errorf("diff =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestStatsSeriesAndTraces(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 30, 20, 0, time.UTC)
	st := NewStats(func() time.Time { return now })
	st.TurnDone("telegram", agent.Result{TurnID: "t1", Trace: []agent.TraceEntry{{Kind: agent.TraceModel}}}, nil, 2*time.Second)
	now = now.Add(time.Minute)
	st.TurnDone("telegram", agent.Result{TurnID: "t2"}, nil, 4*time.Second)
	st.TurnDone("slack", agent.Result{}, errTest, 6*time.Second)
	hour := st.Series(60, 1)
	if len(hour) != 60 {
		t.Fatalf("%d points", len(hour))
	}
	last, prev := hour[59], hour[58]
	if last.Turns != 2 || last.Errors != 1 || last.AvgLat != 5*time.Second || last.MaxLat != 6*time.Second {
		t.Errorf("current minute = %+v", last)
	}
	if prev.Turns != 1 || prev.AvgLat != 2*time.Second {
		t.Errorf("previous minute = %+v", prev)
	}
	if got := st.TurnsLastMinutes(1); got != 2 {
		t.Errorf("turns in the last minute = %d", got)
	}
	// A day later the old buckets do not count again.
	now = now.Add(24 * time.Hour)
	if got := st.TurnsLastMinutes(60); got != 0 {
		t.Errorf("a day later the last hour shows %d turns", got)
	}
	if day := st.Series(96, 15); len(day) != 96 {
		t.Errorf("day series has %d points", len(day))
	}
	if tr, ok := st.Trace("t1"); !ok || len(tr.Entries) != 1 || tr.Channel != "telegram" {
		t.Errorf("trace t1 = %+v, %v", tr, ok)
	}
	for i := range maxTraces + 5 {
		st.TurnDone("web", agent.Result{TurnID: "x" + string(rune('a'+i%26)) + time.Duration(i).String()}, nil, 0)
	}
	if _, ok := st.Trace("t1"); ok {
		t.Error("old traces are not dropped")
	}
}

type testErr struct{}

func (testErr) Error() string { return "failed" }

var errTest = testErr{}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/ui/jobs":             "/ui/jobs",
		"/ui/sessions?q=a":     "/ui/sessions?q=a",
		"https://evil.example": "/ui/",
		"//evil.example/ui/":   "/ui/",
		"/ui/login":            "/ui/",
		"/ui/\\evil":           "/ui/",
		"":                     "/ui/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChartIsPlainSVG(t *testing.T) {
	pts := []Point{{Start: time.Unix(0, 0), Turns: 3, AvgLat: time.Second}, {Start: time.Unix(60, 0), Turns: 0}}
	for _, bars := range []bool{true, false} {
		svg := string(chart(`"><b>id`, `<b>"label"`, pts, turnsOf, countLabel, bars, dayAxis))
		if !strings.HasPrefix(svg, "<svg") || strings.Contains(svg, "style=") || strings.Contains(svg, "<b>") || strings.Contains(svg, "<script") {
			t.Errorf("chart: %s", svg)
		}
	}
	if niceCeil(0) != 1 || niceCeil(3) != 5 || niceCeil(12) != 20 || niceCeil(101) != 200 {
		t.Error("niceCeil")
	}
}
