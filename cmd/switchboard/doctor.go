package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/doctor"
)

func (a *app) doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check config, data dir, database, model endpoint and channel credentials; print fixes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, how, err := a.findConfig()
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "switchboard: %s\n", configNote(path, how))
			_, broken := doctor.Run(cmd.Context(), doctor.Options{ConfigPath: path}, a.stdout)
			if broken {
				return &exitError{code: 1, err: errors.New("doctor found problems (see the fixes above)")}
			}
			return nil
		},
	}
}
