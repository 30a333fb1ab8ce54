package main

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// statusTimeout bounds `switchboard status`: the daemon answers at once or
// something is wrong with it.
const statusTimeout = 10 * time.Second

func (a *app) statusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Ask the running daemon for its status (channels, model, sessions, queues)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, remote, err := a.locate(daemonOnly)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), statusTimeout)
			defer cancel()
			if asJSON {
				var rep daemon.StatusReport
				if err := remote.call(ctx, http.MethodGet, "/admin/status", url.Values{"format": {"json"}}, &rep); err != nil {
					return err
				}
				return a.writeJSON(rep)
			}
			return remote.copyTo(ctx, "/admin/status", nil, a.listOut())
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}
