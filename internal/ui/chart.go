package ui

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// Chart geometry (SVG user units).
const (
	chartW, chartH = 600.0, 140.0
	padL, padB     = 44.0, 18.0
	padT           = 8.0
)

// chart renders points as an inline SVG with element id: bars (turns) or a
// polyline (latency), the first and last bucket's start under the axis in
// layout (a time, or a date and time for a day). It uses presentation
// attributes only (the CSP allows no inline style; the stylesheet recolors
// them for the theme) and writes nothing but numbers and escaped text.
func chart(id, label string, pts []Point, value func(Point) float64, format func(float64) string, bars bool, layout string) template.HTML {
	maxV := 0.0
	for _, p := range pts {
		maxV = max(maxV, value(p))
	}
	top := niceCeil(maxV)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="%s" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		template.HTMLEscapeString(id), chartW, chartH, template.HTMLEscapeString(label))
	plotW, plotH := chartW-padL-4, chartH-padT-padB
	y := func(v float64) float64 { return padT + plotH - v/top*plotH }
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-width="1"/>`, padL, y(0), chartW-4, y(0))
	fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd" stroke-width="1"/>`, padL, y(top), chartW-4, y(top))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end" fill="#666">%s</text>`, padL-4, y(top)+4, template.HTMLEscapeString(format(top)))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end" fill="#666">0</text>`, padL-4, y(0)+4)
	if n := len(pts); n > 0 {
		step := plotW / float64(n)
		var line []string
		for i, p := range pts {
			v := value(p)
			x := padL + float64(i)*step
			if bars {
				if v > 0 {
					fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#3b7dd8"/>`, x, y(v), max(step-0.5, 0.5), y(0)-y(v))
				}
				continue
			}
			line = append(line, fmt.Sprintf("%.2f,%.2f", x+step/2, y(v)))
		}
		if len(line) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="#d8583b" stroke-width="1.5" points="%s"/>`, strings.Join(line, " "))
		}
		first, last := pts[0].Start, pts[n-1].Start
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#666">%s</text>`, padL, chartH-4, template.HTMLEscapeString(first.Local().Format(layout)))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end" fill="#666">%s</text>`, chartW-4, chartH-4, template.HTMLEscapeString(last.Local().Format(layout)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers and escaped text only
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// Axis label layouts: the hour's charts show times, the day's dates too.
const (
	hourAxis = "15:04"
	dayAxis  = "01-02 15:04"
)

func countLabel(v float64) string { return fmt.Sprintf("%.0f", v) }

func secondsLabel(v float64) string {
	return fmtDur(time.Duration(v * float64(time.Second)))
}

func turnsOf(p Point) float64   { return float64(p.Turns) }
func latencyOf(p Point) float64 { return p.AvgLat.Seconds() }
