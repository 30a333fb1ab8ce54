package daemon

import "runtime/debug"

// DefaultGCPercent is the daemon's GOGC when the environment sets none.
//
// Go's default (100) collects whenever the heap has doubled. A daemon's live
// heap is small (a few MiB idle, ~15 MiB with 1,000 chats), so under load it
// collected every few milliseconds, and a tenth of its CPU went to the
// collector and to regrowing the goroutine stacks each cycle shrinks. At 200
// it collects half as often: ~15 % less CPU per message
// (BenchmarkHandlerThroughput) for ~10 MiB more peak heap under load. An idle
// daemon returns its heap every 30 s anyway (pagetrim.go), so its idle
// memory is unchanged.
const DefaultGCPercent = 200

// ApplyGCDefault sets DefaultGCPercent unless GOGC is set (getenv is
// os.Getenv); restore puts back the setting before. The switchboard daemon
// calls it at start, and the handler benchmarks too, so they measure the
// daemon as it runs.
func ApplyGCDefault(getenv func(string) string) (restore func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	previous := debug.SetGCPercent(DefaultGCPercent)
	return func() { debug.SetGCPercent(previous) }
}
