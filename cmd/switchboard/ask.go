package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

func (a *app) askCmd() *cobra.Command {
	var session, persona string
	var noTools, verbose bool
	cmd := &cobra.Command{
		Use:   `ask "text"`,
		Short: "Ask the agent one question and print the answer (kept in a session)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			level := slog.LevelWarn
			if verbose {
				level = cfg.Log.SlogLevel()
			}
			log := a.logger(cfg, level)
			core, err := daemon.BuildCore(cfg, log, nil)
			if err != nil {
				return err
			}
			defer core.Store.Close()
			answer, err := core.Agent.ProcessDirect(cmd.Context(), session, strings.Join(args, " "), agent.DirectOptions{
				Persona: persona, NoTools: noTools, Runtime: agent.Runtime{Channel: "cli", ChatType: "direct"},
			})
			if err != nil {
				return fmt.Errorf("%s", agent.FriendlyError(err))
			}
			fmt.Fprintln(a.stdout, answer)
			return nil
		},
	}
	cmd.Flags().StringVarP(&session, "session", "s", "cli:ask", "session key to keep the conversation in")
	cmd.Flags().StringVar(&persona, "persona", "", "persona to answer as (default: personas.default)")
	cmd.Flags().BoolVar(&noTools, "no-tools", false, "answer without tools")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log at the configured level")
	return cmd
}
