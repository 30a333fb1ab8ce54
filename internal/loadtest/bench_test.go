package loadtest

import (
	"context"
	"flag"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

var (
	useFakeLLM  = flag.Bool("fakellm", false, "BenchmarkHandlerThroughput: answer through fakellm's Echo (in process) instead of the lean EchoModel")
	inprocModel = flag.Bool("inproc-model", false, "BenchmarkHandlerThroughput and BenchmarkHandlerLatency: run EchoModel in the benchmark's process (its allocations and GC counted with the daemon's), not in a child process")
)

// BenchmarkHandlerThroughput pushes b.N messages through the real daemon
// wiring (handler, durable BoltDB store, agent, provider over loopback to an
// instant fake model, outbound with outbox) from 1,000 concurrent chats, each
// a closed loop (next message once the previous one was answered). It reports
// messages/s, the latency from Handle to the reply's Send (p50/p99: handler
// overhead, as the model is instant) and the BoltDB bytes per 1,000 turns.
// allocs/op (-benchmem) is per turn and includes the in-process model: the
// lean EchoModel, or fakellm's Echo with -args -fakellm (how the figures
// before issue 19 were taken; fakellm adds ~180 allocations per turn).
// It runs with the daemon's GC setting (daemon.DefaultGCPercent unless GOGC
// is set: GOGC=100 gives Go's default).
func BenchmarkHandlerThroughput(b *testing.B) {
	const chats = 1000
	_, restore := daemon.ApplyRuntimeDefaults(os.Getenv)
	defer restore()
	ctx := context.Background()
	var (
		ip  *Inproc
		mp  *ModelProcess
		err error
	)
	switch {
	case *useFakeLLM:
		ip, err = StartInproc(ctx, b.TempDir(), 16, fakellm.Echo(), nil)
	case *inprocModel:
		ip, err = StartInproc(ctx, b.TempDir(), 16, nil, nil)
	default: // EchoModel in its own process: the figures are the daemon's
		if mp, err = StartModelProcess(ctx); err == nil {
			ip, err = StartInprocModel(ctx, b.TempDir(), 16, mp, mp.URL, nil)
			if err != nil {
				mp.Close()
			}
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	defer ip.Stop()

	per := make([]int, chats)
	for i := range b.N {
		per[i%chats]++
	}
	lats := make([][]time.Duration, chats)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	var wg sync.WaitGroup
	for c := range chats {
		if per[c] == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait := time.NewTimer(time.Minute) // one a chat, not one a message
			defer wait.Stop()
			for seq := range per[c] {
				tok := Token(c, seq)
				t0 := time.Now()
				ch, err := ip.Chan.Say(ctx, c, tok, tok)
				if err != nil {
					b.Errorf("chat %d: %v", c, err)
					return
				}
				wait.Reset(time.Minute)
				select {
				case at := <-ch:
					lats[c] = append(lats[c], at.Sub(t0))
				case <-wait.C:
					b.Errorf("chat %d: no reply to %s", c, tok)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	b.StopTimer()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(percentile(all, 50))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(all, 99))/1e6, "p99-ms")
	ip.Stop()
	if len(all) > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "cpu-µs/msg")
		if mp != nil {
			// The whole run's, start-up included: an upper bound.
			b.ReportMetric(float64(mp.CPU.Microseconds())/float64(len(all)), "model-cpu-µs/msg")
		}
	}
	if st, err := os.Stat(ip.DBPath); err == nil && len(all) >= 1000 {
		b.ReportMetric(float64(st.Size())/float64(len(all))*1000/1024, "dbKiB/1k-turns")
	}
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
