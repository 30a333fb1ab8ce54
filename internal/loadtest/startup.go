package loadtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// StartupOptions configure a start-up run: the daemon is started Starts
// times with Telegram only (polling), each time in a fresh data directory
// unless ReuseData, and each start is timed from the process start to the
// fake Bot API receiving its first getUpdates.
type StartupOptions struct {
	Bin       string
	Dir       string
	Starts    int
	ReuseData bool     // start every time in the directory (data, personas) of the first start
	Env       []string // extra child environment
	// Timeout bounds one start (default 20s).
	Timeout time.Duration
}

// StartupReport is what a start-up run measured.
type StartupReport struct {
	// ToFirstPoll is each start's time from process start to the first
	// getUpdates, in the order of the starts; ToReady the time to /readyz.
	ToFirstPoll, ToReady []time.Duration
	// Slowest is the index of the slowest start and SlowestLog its daemon
	// log (debug level, with timestamps), to see where the time went.
	Slowest    int
	SlowestLog string
}

// Startup runs o.Starts starts.
func Startup(ctx context.Context, o StartupOptions) (StartupReport, error) {
	if o.Starts <= 0 {
		return StartupReport{}, fmt.Errorf("loadtest: Starts must be positive")
	}
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Second
	}
	p, err := StartPlatforms(ModelOptions{Lean: true})
	if err != nil {
		return StartupReport{}, err
	}
	defer p.Close()
	var rep StartupReport
	for i := range o.Starts {
		dir := filepath.Join(o.Dir, fmt.Sprintf("start%03d", i))
		if o.ReuseData {
			dir = filepath.Join(o.Dir, "reused") // data, personas and config of the first start
		}
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return rep, err
		}
		cfg, err := p.WriteConfig(dir, ConfigOptions{DataDir: data, LogLevel: "debug", NoDiscord: true, NoSlack: true})
		if err != nil {
			return rep, err
		}
		addr, err := FreeAddr()
		if err != nil {
			return rep, err
		}
		polled := p.TelegramTap.NextPoll()
		proc, err := StartProc(o.Bin, cfg, addr, append(p.Env(), o.Env...))
		if err != nil {
			return rep, err
		}
		var first time.Duration
		select {
		case at := <-polled:
			first = at.Sub(proc.Started)
		case <-proc.Done():
			return rep, fmt.Errorf("start %d: daemon exited before its first getUpdates (%v):\n%s", i, proc.Err(), proc.Output())
		case <-time.After(o.Timeout):
			proc.Kill()
			return rep, fmt.Errorf("start %d: no getUpdates within %v:\n%s", i, o.Timeout, proc.Output())
		case <-ctx.Done():
			proc.Kill()
			return rep, ctx.Err()
		}
		ready, err := proc.WaitReady(ctx, o.Timeout)
		if err != nil {
			proc.Kill()
			return rep, fmt.Errorf("start %d: %w", i, err)
		}
		_ = proc.Stop(15 * time.Second)
		rep.ToFirstPoll = append(rep.ToFirstPoll, first)
		rep.ToReady = append(rep.ToReady, ready)
		if first >= rep.ToFirstPoll[rep.Slowest] {
			const ts = "2006-01-02T15:04:05.000Z07:00"
			rep.Slowest = i
			rep.SlowestLog = "(harness) process started " + proc.Started.UTC().Format(ts) + "\n" + proc.Output() +
				"(harness) first getUpdates " + proc.Started.Add(first).UTC().Format(ts) + "\n"
		}
		if !o.ReuseData {
			_ = os.RemoveAll(dir)
		}
	}
	return rep, nil
}

// Markdown writes the percentiles and the slowest start's log.
func (r StartupReport) Markdown(w io.Writer) {
	var b strings.Builder
	q := func(l []time.Duration) string {
		s := slices.Clone(l)
		slices.Sort(s)
		return fmt.Sprintf("min %v, p50 %v, p90 %v, p99 %v, max %v", s[0].Round(100*time.Microsecond),
			percentile(s, 50).Round(100*time.Microsecond), percentile(s, 90).Round(100*time.Microsecond),
			percentile(s, 99).Round(100*time.Microsecond), s[len(s)-1].Round(100*time.Microsecond))
	}
	fmt.Fprintf(&b, "| figure (%d starts) | value |\n|---|---|\n", len(r.ToFirstPoll))
	if len(r.ToFirstPoll) > 0 {
		fmt.Fprintf(&b, "| process start → first getUpdates | %s |\n", q(r.ToFirstPoll))
		fmt.Fprintf(&b, "| process start → /readyz 200 | %s |\n", q(r.ToReady))
		fmt.Fprintf(&b, "| slowest | start %d: %v |\n", r.Slowest, r.ToFirstPoll[r.Slowest].Round(100*time.Microsecond))
		fmt.Fprintf(&b, "\nThe slowest start's log:\n\n```\n%s```\n", r.SlowestLog)
	}
	_, _ = io.WriteString(w, b.String())
}

// DiskPressure writes 8 MiB at a time into a file in dir, syncing every
// 256 MiB, until ctx ends, as other processes' writes do on a busy box: the
// kernel's writeback keeps the disk's queue full, and every fsync of the
// daemon's waits behind it. It returns when ctx is done.
func DiskPressure(ctx context.Context, dir string) error {
	f, err := os.CreateTemp(dir, "pressure-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for n := 1; ctx.Err() == nil; n++ {
		if _, err := f.Write(buf); err != nil {
			return err
		}
		if n%32 == 0 {
			if err := f.Sync(); err != nil {
				return err
			}
			if err := f.Truncate(0); err != nil {
				return err
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
	}
	return nil
}
