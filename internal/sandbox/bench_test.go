package sandbox

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkExecTrue: one `true` in a fresh bubblewrap sandbox (directory,
// namespaces, rlimits, write-back walk, cleanup); p50 and p99 reported.
func BenchmarkExecTrue(b *testing.B) {
	r := bwrapRunner(b, Options{})
	var durs []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := r.Run(context.Background(), "true", nil, Limits{})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run: %+v %v", res, err)
		}
		durs = append(durs, time.Since(start))
	}
	reportPercentiles(b, durs)
}

// BenchmarkWriteBack1000Files: a command that rewrites every one of 1,000
// small files; materializing, running and collecting them all.
func BenchmarkWriteBack1000Files(b *testing.B) {
	r := bwrapRunner(b, Options{})
	files := make([]File, 1000)
	for i := range files {
		files[i] = File{Path: fmt.Sprintf("d%02d/f%04d.txt", i%50, i), Data: []byte(fmt.Sprintf("file %d\n", i)), Mode: 0o644}
	}
	lim := Limits{MaxBytes: 50 << 20, MaxFiles: 1000, MaxFile: 10 << 20}
	cmd := `python3 -c 'import glob
for p in glob.glob("d*/f*.txt"): open(p, "a").write("more\n")'`
	var durs []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := r.Run(context.Background(), cmd, files, lim)
		if err != nil || len(res.Changed) != 1000 {
			b.Fatalf("Run: %d changed, refused %q, stderr %q, %v", len(res.Changed), res.Refused, res.Stderr, err)
		}
		durs = append(durs, time.Since(start))
	}
	reportPercentiles(b, durs)
}

func reportPercentiles(b *testing.B, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	pick := func(q float64) float64 {
		return float64(durs[min(len(durs)-1, int(q*float64(len(durs))))].Microseconds()) / 1000
	}
	b.ReportMetric(pick(0.50), "p50-ms")
	b.ReportMetric(pick(0.99), "p99-ms")
}
