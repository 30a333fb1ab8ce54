package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
)

func (a *app) auditCmd() *cobra.Command {
	var session, since string
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Print the audit log: tool calls, admin commands, pairing decisions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := memory.AuditFilter{Session: session, Limit: limit}
			if since != "" {
				d, err := config.ParseDuration(since)
				if err != nil {
					return usageErr(fmt.Errorf("--since: %w", err))
				}
				f.Since = time.Now().Add(-d)
			}
			return a.withStore(func(st *memory.Store) error {
				recs, err := st.ListAudit(cmd.Context(), f)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tACTOR\tACTION\tSESSION\tDETAIL\tERROR")
				for _, r := range recs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(time.DateTime), orDash(r.Actor),
						r.Action, orDash(r.Session), clip(r.Detail, 80), orDash(r.Error))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "only records of this session")
	cmd.Flags().StringVar(&since, "since", "", "only records newer than this (e.g. 24h, 7d)")
	cmd.Flags().IntVar(&limit, "limit", 200, "at most this many records")
	return cmd
}
