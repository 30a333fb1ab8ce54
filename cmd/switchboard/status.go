package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
)

// statusTimeout bounds `switchboard status`: the daemon answers at once or
// something is wrong with it.
const statusTimeout = 10 * time.Second

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
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
			return remote.copyTo(ctx, "/admin/status", nil, a.listOut())
		},
	}
}
