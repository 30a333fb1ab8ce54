package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// healthcheckCmd asks the daemon's /healthz where it listens (server.listen,
// or the address it recorded in its data directory): exit 0 when it
// answers 200, 1 otherwise. The Docker image's HEALTHCHECK runs it (the
// image has no curl or wget).
func (a *app) healthcheckCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the running daemon answers /healthz (for container health checks)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := a.loadConfigQuiet() // quiet: runs every few seconds
			if err != nil {
				return err
			}
			if cfg.Server.Listen == "" {
				return usagef("server.listen is empty, so there is no /healthz to ask")
			}
			// Where the daemon listens (daemon.listen), as for every
			// command; it is sent no token, so nothing needs proving.
			local, _ := daemon.ReadLocalToken(cfg.ResolvePath(cfg.Bot.DataDir))
			host, _ := daemonAddr(cfg, local)
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/healthz", nil)
			if err != nil {
				return err
			}
			resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
			if err != nil {
				return daemonDown(host, err)
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("the daemon at %s is unhealthy: /healthz answered %s", host, resp.Status)
			}
			fmt.Fprintln(a.stdout, "ok")
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return cmd
}
