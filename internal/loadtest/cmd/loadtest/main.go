// Command loadtest runs Switchboard's load harness: it builds (or takes) the
// switchboard binary, runs it as a child process against in-process fakes of
// Telegram, Discord, Slack and an OpenAI-compatible model, drives N chats × M
// messages and prints the figures BENCHMARKS.md records.
//
//	go run ./internal/loadtest/cmd/loadtest -chats 300 -messages 10
//	go run ./internal/loadtest/cmd/loadtest -platforms discord,slack -chats 200 -messages 20
//	go run ./internal/loadtest/cmd/loadtest -release -idle
//	go run ./internal/loadtest/cmd/loadtest -starts 50
//	go run ./internal/loadtest/cmd/loadtest -platforms telegram -chats 20 -messages 10 -answer-chars 300 [-unpaced] [-perf tg.data]
//	go run ./internal/loadtest/cmd/loadtest ... -env GODEBUG=gctrace=1 -daemon-log daemon.txt
//
// -platforms discord,slack leaves Telegram (and its deliberate 30 msg/s send
// pacing) out, so the figure is the daemon's own end-to-end rate.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
)

func main() {
	chats := flag.Int("chats", 300, "concurrent chats (spread over -platforms)")
	platforms := flag.String("platforms", "telegram,discord,slack", "platforms the chats live on (comma-separated)")
	messages := flag.Int("messages", 10, "messages per chat (closed loop)")
	delay := flag.Duration("model-delay", 0, "model latency before the first byte")
	tps := flag.Float64("tps", 0, "model tokens (chunks) per second; 0 = instant")
	turns := flag.Int("max-turns", 64, "agent.max_concurrent_turns")
	bin := flag.String("bin", "", "switchboard binary (default: go build ./cmd/switchboard)")
	release := flag.Bool("release", false, "without -bin: build the binary as the Dockerfile does (CGO_ENABLED=0, -trimpath, stripped)")
	gogc := flag.String("gogc", "", "GOGC for the daemon (empty = Go default)")
	memlimit := flag.String("gomemlimit", "", "GOMEMLIMIT for the daemon (e.g. 32MiB)")
	logLevel := flag.String("log-level", "warn", "daemon log level")
	idle := flag.Bool("idle", false, "measure the idle daemon only (boot, RSS by mapping), no messages")
	settle := flag.Duration("idle-settle", 500*time.Millisecond, "wait after /readyz before sampling idle RSS")
	answer := flag.Int("answer-chars", 0, "pad each user message so the streamed echo answer is about this many characters (0 = the bare token)")
	unpaced := flag.Bool("unpaced", false, "turn Telegram's send pacing off (channels.telegram.rate per_chat and global 0)")
	perf := flag.String("perf", "", "record the daemon's CPU profile during the load with perf record -g into this file (use a binary with symbols)")
	cpuProfile := flag.String("cpuprofile", "", "write the harness process's CPU profile (fakes, taps, drivers) here")
	harnessGC := flag.Int("harness-gogc", 400, "GOGC of this harness process only (fakes, taps, drivers; the daemon's is -gogc): "+
		"its heap is small, and collecting it less often leaves more of the shared cores to the daemon; -1 turns its GC off")
	starts := flag.Int("starts", 0, "measure start-up instead: start the daemon this many times (Telegram only, fresh data each) and time process start → first getUpdates")
	pressure := flag.Bool("disk-pressure", false, "with -starts: write and fsync 8 MiB at a time beside the daemon (a busy box's disk)")
	reuse := flag.Bool("reuse-data", false, "with -starts: start on the same data directory every time")
	daemonLog := flag.String("daemon-log", "", "write the daemon's output (log, GODEBUG traces) to this file when the run ends")
	var extraEnv envList
	flag.Var(&extraEnv, "env", "extra KEY=VALUE for the daemon's environment (repeatable)")
	flag.Parse()
	debug.SetGCPercent(*harnessGC)
	pls, err := loadtest.ParsePlatforms(*platforms)
	if err != nil {
		fail(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "switchboard-load-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		build := loadtest.BuildBinary
		if *release {
			build = loadtest.BuildRelease
		}
		if *bin, err = build(ctx, dir); err != nil {
			fail(err)
		}
	}
	var env []string
	if *gogc != "" {
		env = append(env, "GOGC="+*gogc)
	}
	if *memlimit != "" {
		env = append(env, "GOMEMLIMIT="+*memlimit)
	}
	env = append(env, extraEnv...)
	if *starts > 0 {
		if *pressure {
			pctx, stopPressure := context.WithCancel(ctx)
			defer stopPressure()
			go func() { _ = loadtest.DiskPressure(pctx, dir) }()
		}
		rep, err := loadtest.Startup(ctx, loadtest.StartupOptions{Bin: *bin, Dir: dir, Starts: *starts, ReuseData: *reuse, Env: env})
		fmt.Printf("start-up: %d starts, %d cores, %s\n", *starts, runtime.NumCPU(), time.Now().Format(time.RFC3339))
		rep.Markdown(os.Stdout)
		if err != nil {
			fail(err)
		}
		return
	}
	fmt.Printf("load harness: %d chats × %d messages on %s, model delay %v, %g tokens/s, %d cores, %s\n",
		*chats, *messages, *platforms, *delay, *tps, runtime.NumCPU(), time.Now().Format(time.RFC3339))
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fail(err)
		}
		defer stopProfile()
	}
	rep, err := loadtest.Run(ctx, loadtest.Options{Bin: *bin, Dir: dir, Chats: *chats, Messages: *messages, Platforms: pls,
		ModelDelay: *delay, TokensPerSecond: *tps, MaxConcurrentTurns: *turns, Env: env,
		AnswerChars: *answer, TelegramUnpaced: *unpaced, PerfProfile: *perf, DaemonLog: *daemonLog, LogLevel: *logLevel, IdleOnly: *idle, IdleSettle: *settle})
	if *idle {
		rep.IdleMarkdown(os.Stdout)
	} else {
		rep.Markdown(os.Stdout)
	}
	if err != nil {
		fail(err)
	}
}

// startCPUProfile profiles this process into path until the returned stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// envList collects repeated -env flags.
type envList []string

func (e *envList) String() string     { return strings.Join(*e, " ") }
func (e *envList) Set(v string) error { *e = append(*e, v); return nil }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadtest:", err)
	os.Exit(1)
}
