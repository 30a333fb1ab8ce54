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
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

func (a *app) runCmd() *cobra.Command {
	var dataDir, listen string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon (the default command)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if dataDir != "" {
				cfg.Bot.DataDir = dataDir
			}
			if listen != "" {
				cfg.Server.Listen = listen
			}
			level := new(slog.LevelVar)
			level.Set(cfg.Log.SlogLevel())
			log := a.logger(cfg, level)
			return a.serve(cmd.Context(), daemon.Options{Config: cfg, Logger: log, LogLevel: level, Stdin: a.stdin, Stdout: a.stdout}, log)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "override bot.data_dir")
	cmd.Flags().StringVar(&listen, "listen", "", "override server.listen")
	return cmd
}

func (a *app) chatCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Chat with the bot in this terminal (console channel only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			cfg.Server.Listen = "" // a running daemon may hold the port
			level := slog.LevelWarn
			if verbose {
				level = cfg.Log.SlogLevel()
			}
			log := a.logger(cfg, level)
			fmt.Fprintf(a.stdout, "Chatting with %s (model %s). Type /help for commands, Ctrl-D or Ctrl-C to quit.\n", cfg.Bot.Name, cfg.LLM.Model)
			return a.serve(cmd.Context(), daemon.Options{Config: cfg, Logger: log, Stdin: a.stdin, Stdout: a.stdout,
				OnlyConsole: true, ConsolePrompt: true, QuitOnEOF: true}, log)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log at the configured level instead of warnings only")
	return cmd
}

// serve builds and runs the daemon until SIGINT/SIGTERM.
func (a *app) serve(ctx context.Context, opts daemon.Options, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if msg := modelSetupHint(opts.Config.LLM.BaseURL, opts.Config.LLM.APIKey.IsSet()); msg != "" {
		log.Warn(msg)
	}
	d, err := daemon.New(ctx, opts)
	if err != nil {
		return err
	}
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
