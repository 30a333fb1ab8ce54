package main

// `switchboard token rotate`: a new local admin token (<data_dir>/admin.token,
// which the console's login and the CLI use). The daemon keeps its token
// across restarts and holds it while it runs, so a rotation while it runs is
// staged (admin.token.next) and takes effect when it restarts; until then
// the running daemon and the file the CLI reads keep the current token, and
// nothing the operator runs in between is locked out. With the daemon
// stopped the file changes at once. The token is never printed.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

func (a *app) tokenCmd() *cobra.Command {
	token := &cobra.Command{
		Use:   "token",
		Short: "The admin token the console and the CLI use (<data_dir>/admin.token)",
	}
	token.AddCommand(&cobra.Command{
		Use:   "rotate",
		Short: "Replace the admin token in <data_dir>/admin.token",
		Long: `Replace the admin token the daemon keeps in <data_dir>/admin.token (the console's
login and local CLI commands use it; it stays the same across restarts until rotated).

With the daemon stopped, the file gets the new token at once. While the daemon runs,
the new token waits in admin.token.next and the daemon switches to it when it
restarts: restart it to finish. Until then the running daemon and admin.token keep
the current token, so CLI commands go on working. Logged-in console sessions end
with the restart. The token is never printed: read the file.

server.admin_token, when set, is the token the CLI sends and is not changed here.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			dir := cfg.ResolvePath(cfg.Bot.DataDir)
			running := daemonRunning(cmd.Context(), cfg)
			path, err := daemon.RotateLocalToken(dir, running)
			if err != nil {
				return fmt.Errorf("rotate the admin token: %w", err)
			}
			if running {
				fmt.Fprintf(a.stdout, "new admin token staged in %s: restart the daemon to switch to it (until then the running daemon and %s keep the current one)\n",
					path, daemon.AdminTokenFile)
			} else {
				fmt.Fprintf(a.stdout, "new admin token written to %s; the daemon uses it from its next start (read it there, or use `switchboard console`)\n", path)
			}
			if cfg.Server.AdminToken.IsSet() {
				where := "the config"
				if cfg.Path != "" {
					where = cfg.Path
				}
				fmt.Fprintf(a.stdout, "note: server.admin_token is set in %s and wins: the CLI sends it, and token rotate does not change it; "+
					"to rotate it, change it there (or the variable it names) and restart the daemon\n", where)
			}
			return nil
		},
	})
	return token
}

// daemonRunning reports whether a daemon answers /healthz on cfg's
// server.listen. One without a listen address serves neither the console
// nor the admin API, so nothing uses its token until it restarts, and
// replacing the file at once is as good.
func daemonRunning(ctx context.Context, cfg *config.Config) bool {
	c, err := newDaemonClient(cfg, io.Discard)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.alive(ctx)
}
