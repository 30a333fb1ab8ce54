package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/config"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Validate, read and edit config.yaml"}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check config.yaml (or FILE) and the personas it names; report every problem with its line",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				if a.configPath != "" && a.configPath != args[0] {
					return usagef("name the file once: --config %s and %s disagree", a.configPath, args[0])
				}
				a.configPath, a.configFrom = args[0], "the command line"
			}
			return a.validate()
		},
	}, &cobra.Command{
		Use:   "get KEY",
		Short: "Print a key's value (secrets are shown as [redacted], an empty value as (not set))",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			v, err := config.Get(cfg, args[0])
			if err != nil {
				return usageErr(err)
			}
			if v == "" {
				v = "(not set)"
			}
			fmt.Fprintln(a.stdout, v)
			return nil
		},
	}, &cobra.Command{
		Use:   "show",
		Short: "Print the whole effective config (defaults filled in, secrets as [redacted])",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			y, err := cfg.RedactedYAML()
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(y)
			return err
		},
	}, &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a key in config.yaml in place, keeping comments; refuses an edit the running daemon (or, without one, this shell) would not load",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.editConfig(cmd.Context(), args[0], args[1], false)
		},
	}, &cobra.Command{
		Use:   "unset KEY",
		Short: "Remove a key from config.yaml (it falls back to its default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.editConfig(cmd.Context(), args[0], "", true)
		},
	})
	return cmd
}
