// Command switchboard is the Switchboard daemon and its operator CLI:
// run (default), chat, ask, config, sessions, pairing, version.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	_ "time/tzdata" // IANA zones even in a scratch/distroless image

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/config"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

const levelWarn = slog.LevelWarn

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the CLI and returns the exit code; tests call it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	return a.execute(ctx, a.rootCmd(), args)
}

// execute runs the command args name under root and returns the exit code,
// having printed the error, if any, as one sentence on stderr. A panic or a
// memory fault in the command is one line too, and exit 1 (crash.go), unless
// SWITCHBOARD_TRACEBACK=1.
func (a *app) execute(ctx context.Context, root *cobra.Command, args []string) (code int) {
	stderr := a.stderr // a.stderr may be rewrapped by the command (run.go)
	if a.getenv(tracebackEnv) != "1" {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				code = crashed(stderr, r)
			}
		}()
	}
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	code, msg := exitCode(cmd, err)
	fmt.Fprintf(stderr, "switchboard: %s\n", msg)
	return code
}

type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	configPath     string              // --config/-c ("" = SWITCHBOARD_CONFIG, then the lookup in configpath.go)
	configFrom     string              // how configPath was given, for messages ("" = --config)
	dataDir        string              // --data-dir ("" = SWITCHBOARD_DATA_DIR, then bot.data_dir)
	env            func(string) string // nil = os.Getenv
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "switchboard",
		Short: "Switchboard: one AI bot for Slack, Discord, Telegram and the terminal",
		Long: `Switchboard is a self-hosted AI bot daemon. Without a subcommand it runs the daemon.

The config file is the one named by --config, else by $SWITCHBOARD_CONFIG (either must exist),
else the first of ./config.yaml, <user config dir>/switchboard/config.yaml and
/etc/switchboard/config.yaml that exists, else the built-in defaults. Every command says which
file it used. Exit codes: 0 success, 1 runtime failure, 2 usage or configuration mistake.
A panic in a command is one line and exit 1; SWITCHBOARD_TRACEBACK=1 shows the Go trace instead.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetVersionTemplate("switchboard {{.Version}}\n")
	root.PersistentFlags().StringVarP(&a.configPath, "config", "c", "", "config file (default: $SWITCHBOARD_CONFIG, else ./config.yaml, <user config dir>/switchboard/config.yaml, /etc/switchboard/config.yaml)")
	root.PersistentFlags().StringVar(&a.dataDir, "data-dir", "", "override bot.data_dir (default: $SWITCHBOARD_DATA_DIR)")
	runCmd := a.runCmd()
	root.RunE = runCmd.RunE
	root.Flags().AddFlagSet(runCmd.Flags())
	root.AddCommand(runCmd, a.chatCmd(), a.askCmd(), a.configCmd(), a.sessionsCmd(), a.pairingCmd(), a.statusCmd(), a.jobsCmd(), a.auditCmd(), a.doctorCmd(), a.personasCmd(), a.promptCmd(), a.versionCmd(), a.healthcheckCmd(), a.mcpCmd(), a.storageCmd(), a.clusterCmd(),
		a.consoleCmd(), a.tokenCmd())
	wireUsage(root)
	return root
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
