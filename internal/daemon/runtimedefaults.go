package daemon

import (
	"runtime"
	"runtime/debug"
)

// The daemon's Go runtime settings when the environment sets none: the
// collector's pace (GOGC) and the number of Ps (GOMAXPROCS). Both are
// measured in BENCHMARKS.md ("Issue 19"); an operator's GOGC or GOMAXPROCS
// always wins.

// DefaultGCPercent is the daemon's GOGC when the environment sets none.
//
// Go's default (100) collects whenever the heap has doubled. A daemon's live
// heap is small (a few MiB idle, ~15 MiB with 1,000 chats), so under load it
// collected every few milliseconds, and much of its CPU went to the collector
// and to regrowing the goroutine stacks each cycle shrinks. Each cycle's cost
// is mostly fixed (it scans the stacks of every waiting turn, intake and
// delivery), so fewer cycles is what saves: 200 takes 15–20 % less CPU a
// message than 100 end to end (0.51–0.61 against 0.66–0.71 ms with 200
// Discord and Slack chats × 10 messages). 400 was the default until
// 2026-11-27, from figures read in 10 ms clock ticks; read in nanoseconds
// (the load harness's schedstat CPU time), 400 costs the same CPU as 200 in
// every load measured — Telegram 20 chats × 10, Discord and Slack 200 × 10,
// BenchmarkHandlerThroughput — while its peak is higher: 38.7–40.8 against
// 35.5–37.2 MiB (Telegram), 97–108 against 68–78 MiB (Discord and Slack).
// The heap a cycle leaves behind is also the heap the next burst touches
// anew after an idle trim (page faults, zeroed pages), which a larger goal
// pays in CPU. BENCHMARKS.md, "Issue 35, second look". An idle daemon
// returns its heap every 30 s anyway (pagetrim.go); where memory is tight,
// GOGC or GOMEMLIMIT in the environment win.
const DefaultGCPercent = 200

// ProcsPerCPU is how many Ps (GOMAXPROCS) the daemon runs per CPU Go would
// use by default (its cgroup-aware count) when the environment sets none.
//
// A busy daemon is a pipeline around one serial stage: the store's group
// commit, whose goroutine blocks in two fdatasyncs a commit while every
// other stage waits on the network (the model, the platforms). With one P a
// CPU, a goroutine coming back from a syscall or the network poller finds
// every P busy and queues behind hundreds of runnable goroutines: measured
// with 1,000 chats on 2 CPUs, the 90th percentile of the runtime's
// scheduling latency was 3.7–5.2 ms, the commit loop stalled after each
// fsync and the CPUs sat ~15 % idle (iowait) while 700 messages queued. With
// two Ps a CPU the kernel shares the CPUs between more threads, a returning
// goroutine runs sooner (p90 0.9–2.1 ms), commits carry 3–4× more writers
// each, and the durable throughput rose 15–20 % to what the same daemon
// reaches with fsync turned off. Three or more Ps a CPU measured no better.
// Extra Ps spread the heap over more per-P span caches (~0.5 MiB more
// resident when idle), so a daemon that hands memory back when idle
// (Options.ReleaseIdleMemory) drops to Go's count then and takes the extra
// Ps again with the next message (procscale.go).
const ProcsPerCPU = 2

// ApplyGCDefault sets DefaultGCPercent unless GOGC is set (getenv is
// os.Getenv); restore puts back the setting before.
func ApplyGCDefault(getenv func(string) string) (restore func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	previous := debug.SetGCPercent(DefaultGCPercent)
	return func() { debug.SetGCPercent(previous) }
}

// Procs is the P count ApplyProcsDefault chose: Busy under traffic, Idle
// (Go's default) once the daemon is idle. The zero value means GOMAXPROCS
// is the operator's and the daemon leaves it alone.
type Procs struct{ Idle, Busy int }

// ApplyProcsDefault sets GOMAXPROCS to ProcsPerCPU times Go's default unless
// GOMAXPROCS is set (getenv is os.Getenv), and returns the counts for
// Options.Procs; restore goes back to Go's default. Setting it stops Go from
// following a change of the cgroup's CPU limit while the daemon runs; the
// count is taken at start.
func ApplyProcsDefault(getenv func(string) string) (Procs, func()) {
	if getenv("GOMAXPROCS") != "" {
		return Procs{}, func() {}
	}
	def := runtime.GOMAXPROCS(0)
	p := Procs{Idle: def, Busy: ProcsPerCPU * def}
	runtime.GOMAXPROCS(p.Busy)
	return p, runtime.SetDefaultGOMAXPROCS
}

// Runtime is what ApplyRuntimeDefaults chose.
type Runtime struct {
	Procs Procs
	// CgroupMemLimit is the cgroup memory limit the Go memory limit was
	// derived from (ApplyMemLimitDefault), GoMemLimit the limit set; both 0
	// when none was applied.
	CgroupMemLimit, GoMemLimit int64
}

// ApplyRuntimeDefaults applies ApplyGCDefault, ApplyProcsDefault and
// ApplyMemLimitDefault; restore undoes all three. The switchboard daemon calls
// it at start (and passes the Procs on), and the handler benchmarks too, so
// they measure the daemon as it runs.
func ApplyRuntimeDefaults(getenv func(string) string) (Runtime, func()) {
	gc := ApplyGCDefault(getenv)
	p, procs := ApplyProcsDefault(getenv)
	limit, mem := ApplyMemLimitDefault(getenv, "/")
	return Runtime{Procs: p, CgroupMemLimit: limit, GoMemLimit: goMemLimit(limit)}, func() {
		mem()
		procs()
		gc()
	}
}
