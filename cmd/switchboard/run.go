package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

func (a *app) runCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon (the default command)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			seed, err := a.seedConfig() // first start in the image (seed.go)
			if err != nil {
				return err
			}
			cfg, note, err := a.loadConfigQuiet()
			if err != nil {
				return err
			}
			if seed != nil {
				if err := seedDirs(cfg); err != nil {
					return err
				}
			}
			if listen != "" {
				cfg.Server.Listen = listen
			}
			level := new(slog.LevelVar)
			level.Set(cfg.Log.SlogLevel())
			// GOGC=200, 2 Ps a CPU, the Go memory limit under a cgroup's,
			// unless set (runtimedefaults.go, memlimit.go).
			rt, restore := daemon.ApplyRuntimeDefaults(os.Getenv)
			defer restore()
			opts := daemon.Options{Config: cfg, LogLevel: level, Stdin: a.stdin, Stdout: a.stdout, ReleaseIdleMemory: true, Procs: rt.Procs}
			if cfg.Channels.Enabled(console.Name) {
				// Answers on stdout, logs on stderr, never tearing each other's
				// lines; a prompt when stdin is a terminal.
				tty := console.IsTerminal(a.stdin) && console.IsTerminal(a.stdout)
				opts.ConsoleScreen = console.NewScreen(a.stdout, tty)
				opts.ConsolePrompt = tty
				a.stderr = opts.ConsoleScreen.Logs(a.stderr)
			}
			log := a.logger(cfg, level)
			opts.Logger = log
			if seed != nil {
				log.Info("first start: wrote the default config; edit it with `switchboard config set` or the console, it is never overwritten",
					"file", seed.file, "from", seed.from)
			}
			log.Info(note, "data_dir", cfg.ResolvePath(cfg.Bot.DataDir))
			if rt.CgroupMemLimit > 0 {
				log.Info("Go memory limit set below the cgroup's (GOMEMLIMIT unset)",
					"cgroup_limit_mib", rt.CgroupMemLimit>>20, "go_limit_mib", rt.GoMemLimit>>20)
			}
			return a.serve(cmd.Context(), opts, log)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "override server.listen")
	return cmd
}

func (a *app) chatCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Chat with the bot in this terminal (through the running daemon, if any)",
		Long: `Chat with the bot in this terminal: the console chat console:local.

With the daemon running, the chat goes through its admin API (server.listen)
and the daemon answers; otherwise chat runs the bot with the console channel
only. Ctrl-D quits. Ctrl-C quits too: through the daemon it stops an answer in
progress at once; without it, it waits up to 10s for the answer and says so, and
a second Ctrl-C cancels it. A canceled question is not answered later.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, remote, err := a.locate(mayCreate)
			if err != nil {
				return err
			}
			if remote != nil { // the daemon runs: chat in its console
				return a.remoteChat(cmd.Context(), cfg, remote)
			}
			cfg.Server.Listen = "" // a running daemon may hold the port
			level := slog.LevelWarn
			if verbose {
				level = cfg.Log.SlogLevel()
			}
			screen := console.NewScreen(a.stdout, console.IsTerminal(a.stdin) && console.IsTerminal(a.stdout))
			a.stderr = screen.Logs(a.stderr) // warnings never tear an answer line
			log := a.logger(cfg, level)
			fmt.Fprintf(a.stdout, "Chatting with %s (model %s). Type /help for commands, Ctrl-D or Ctrl-C to quit.\n", cfg.Bot.Name, cfg.LLM.Model)
			return a.serve(cmd.Context(), daemon.Options{Config: cfg, Logger: log, Stdin: a.stdin, Stdout: a.stdout,
				OnlyConsole: true, ConsolePrompt: true, QuitOnEOF: true, ConsoleScreen: screen}, log)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log at the configured level instead of warnings only")
	return cmd
}

// serve builds and runs the daemon until SIGINT/SIGTERM (see interrupts).
func (a *app) serve(ctx context.Context, opts daemon.Options, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs, stop := notifyStop()
	defer stop()
	if msg := modelSetupHint(opts.Config.LLM.BaseURL, opts.Config.LLM.APIKey.IsSet()); msg != "" {
		log.Warn(msg)
	}
	d, err := daemon.New(ctx, opts)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	go a.interrupts(sigs, done, d, opts.ConsoleScreen, cancel)
	go releaseStartupMemory(ctx, d) // ends with ctx at the latest
	go announceConsole(ctx, d, opts.Config, log)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() { // ends when the daemon's context ends
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_, _ = d.Reload(ctx, "SIGHUP")
			}
		}
	}()
	return d.Run(ctx)
}

// modelSetupHint is the one line logged at start when no model is usable.
func modelSetupHint(baseURL string, keySet bool) string {
	if baseURL == "" && !keySet {
		return "no model is configured yet: the bot will start, but answers only with setup guidance. " + agent.ErrModelNotConfigured.Error()
	}
	return ""
}
