package main

import (
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
)

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Ask the running daemon for its status (channels, model, sessions, queues)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			body, err := a.adminCall(cfg, http.MethodGet, "/admin/status", nil)
			if err != nil {
				return err
			}
			fmt.Fprint(a.stdout, string(body))
			return nil
		},
	}
}
