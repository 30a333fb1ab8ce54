package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/doctor"
)

func (a *app) doctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check config, data dir, database, model endpoint and channel credentials; print fixes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, how, err := a.findConfig()
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "switchboard: %s\n", configNote(path, how))
			var broken bool
			if asJSON {
				results := doctor.Check(cmd.Context(), doctor.Options{ConfigPath: path})
				if err := a.writeJSON(doctorDoc(path, time.Now(), results)); err != nil {
					return err
				}
				broken = doctor.Broken(results)
			} else {
				_, broken = doctor.Run(cmd.Context(), doctor.Options{ConfigPath: path}, a.stdout)
			}
			if broken {
				return &exitError{code: 1, err: errors.New(doctorProblems(asJSON))}
			}
			return nil
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// doctorProblems is the error line of a doctor run with a failed check.
func doctorProblems(asJSON bool) string {
	if asJSON {
		return "doctor found problems (see the checks with \"status\": \"fail\")"
	}
	return "doctor found problems (see the fixes above)"
}
