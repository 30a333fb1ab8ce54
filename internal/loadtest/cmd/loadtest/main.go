// Command loadtest runs Switchboard's load harness: it builds (or takes) the
// switchboard binary, runs it as a child process against in-process fakes of
// Telegram, Discord, Slack and an OpenAI-compatible model, drives N chats × M
// messages and prints the figures BENCHMARKS.md records.
//
//	go run ./internal/loadtest/cmd/loadtest -chats 300 -messages 10
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/switchboard-bot/switchboard/internal/loadtest"
)

func main() {
	chats := flag.Int("chats", 300, "concurrent chats (spread over Telegram, Discord, Slack)")
	messages := flag.Int("messages", 10, "messages per chat (closed loop)")
	delay := flag.Duration("model-delay", 0, "model latency before the first byte")
	tps := flag.Float64("tps", 0, "model tokens (chunks) per second; 0 = instant")
	turns := flag.Int("max-turns", 64, "agent.max_concurrent_turns")
	bin := flag.String("bin", "", "switchboard binary (default: go build ./cmd/switchboard)")
	gogc := flag.String("gogc", "", "GOGC for the daemon (empty = Go default)")
	memlimit := flag.String("gomemlimit", "", "GOMEMLIMIT for the daemon (e.g. 32MiB)")
	logLevel := flag.String("log-level", "warn", "daemon log level")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "switchboard-load-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		if *bin, err = loadtest.BuildBinary(ctx, dir); err != nil {
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
	fmt.Printf("load harness: %d chats × %d messages, model delay %v, %g tokens/s, %d cores, %s\n",
		*chats, *messages, *delay, *tps, runtime.NumCPU(), time.Now().Format(time.RFC3339))
	rep, err := loadtest.Run(ctx, loadtest.Options{Bin: *bin, Dir: dir, Chats: *chats, Messages: *messages,
		ModelDelay: *delay, TokensPerSecond: *tps, MaxConcurrentTurns: *turns, Env: env, LogLevel: *logLevel})
	rep.Markdown(os.Stdout)
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadtest:", err)
	os.Exit(1)
}
