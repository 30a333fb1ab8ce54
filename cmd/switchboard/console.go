package main

// The web console from the command line: the start line that says where it
// is, and `switchboard console`, which prints a one-time login link (like
// `minikube dashboard --url`). The link comes from the running daemon
// (POST /ui/login/link with the admin token the CLI reads like every admin
// command: server.admin_token, else <data_dir>/admin.token); it logs one
// browser in, once, within --expires. Neither the link's token nor the admin
// token is ever logged; the link is printed on stdout only.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/ui"
)

func (a *app) consoleCmd() *cobra.Command {
	var expires time.Duration
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Print a one-time link that logs a browser in to the web console",
		Long: `Print a one-time link that logs a browser in to the running daemon's web console.

Open it in a browser on this machine: it logs that browser in (as the admin
token does) and is then used up. An unused link expires after --expires
(default 5m, at most 15m), and when the daemon stops. The daemon must be
running with server.ui on. The link is printed on stdout and nowhere else.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if expires <= 0 || expires > ui.MaxLinkTTL {
				return usagef("--expires %s: a login link lasts more than 0 and at most %s", expires, ui.MaxLinkTTL)
			}
			_, remote, err := a.locate(daemonOnly)
			if err != nil {
				return err
			}
			var link ui.LoginLink
			err = remote.call(cmd.Context(), http.MethodPost, "/ui/login/link", url.Values{"ttl": {expires.String()}}, &link)
			switch st := httpStatus(err); {
			case st == http.StatusNotFound:
				return usageErr(errors.New("the daemon serves no web console: server.ui is off (switchboard config set server.ui true, then restart the daemon)"))
			case st == http.StatusServiceUnavailable: // the console refused to start; the daemon says why
				return usageErr(err)
			case err != nil:
				return err
			}
			fmt.Fprintln(a.stdout, remote.base+link.Path)
			fmt.Fprintf(a.stderr, "switchboard: open the link in a browser on this machine; it logs in once, until %s\n",
				link.Expires.Local().Format("15:04:05"))
			return nil
		},
	}
	cmd.Flags().DurationVar(&expires, "expires", ui.DefaultLinkTTL, fmt.Sprintf("how long the link stays usable (at most %s)", ui.MaxLinkTTL))
	return cmd
}

// announceConsole logs where the web console is, once the daemon runs
// (with server.ui on and the console allowed to serve): the URL and how to
// log in, never a token.
func announceConsole(ctx context.Context, d *daemon.Daemon, cfg *config.Config, log *slog.Logger) {
	if !cfg.Server.UI || ui.CheckServe(cfg) != nil {
		return // the daemon logs why the console is off
	}
	select {
	case <-d.Ready():
	case <-ctx.Done():
		return
	}
	if addr := d.Addr(); addr != nil {
		log.Info("console: " + consoleBase(addr.String()) + "/ui/ (`switchboard console` prints a login link)")
	}
}

// consoleBase is the console's base URL for a listen address: on every
// address (0.0.0.0, ::) it is reached through loopback.
func consoleBase(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
