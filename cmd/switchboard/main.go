// Command switchboard is the Switchboard daemon and its operator CLI:
// run (default), chat, ask, config, sessions, pairing, version.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	_ "time/tzdata" // IANA zones even in a scratch/distroless image

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/config"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

const levelWarn = slog.LevelWarn

// exitError carries a process exit code with a message for stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks an error as the operator's mistake (exit code 2).
func usageErr(err error) error { return &exitError{code: 2, err: err} }

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the CLI and returns the exit code; tests call it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := app.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "switchboard: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	configPath     string
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "switchboard",
		Short: "Switchboard: one AI bot for Slack, Discord, Telegram and the terminal",
		Long: `Switchboard is a self-hosted AI bot daemon. Without a subcommand it runs the daemon
with the given config (default ./config.yaml).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVarP(&a.configPath, "config", "c", "config.yaml", "path to config.yaml")
	runCmd := a.runCmd()
	root.RunE = runCmd.RunE
	root.Flags().AddFlagSet(runCmd.Flags())
	root.AddCommand(runCmd, a.chatCmd(), a.askCmd(), a.configCmd(), a.sessionsCmd(), a.pairingCmd(), a.statusCmd(), a.jobsCmd(), a.auditCmd(), a.doctorCmd(), a.personasCmd(), a.promptCmd(), a.versionCmd())
	return root
}

// loadConfig loads the config, marking errors as the operator's (exit 2).
func (a *app) loadConfig() (*config.Config, error) {
	cfg, err := config.Load(a.configPath)
	if err != nil {
		return nil, usageErr(err)
	}
	return cfg, nil
}

func (a *app) logger(cfg *config.Config, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(a.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(a.stderr, opts))
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(a.stdout, "switchboard %s\n", version)
			return nil
		},
	}
}
