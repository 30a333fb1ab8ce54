package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/memory"
)

func (a *app) auditCmd() *cobra.Command {
	var session, since string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Print the audit log: tool calls, admin commands, pairing decisions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageErr(fmt.Errorf("--limit %d: give a count of records (0 = all)", limit))
			}
			f := memory.AuditFilter{Session: session, Limit: limit}
			var err error
			if f.Since, err = sinceTime(since); err != nil {
				return err
			}
			cfg, remote, err := a.locate(needData)
			if err != nil {
				return err
			}
			var recs []memory.AuditRecord
			if remote != nil {
				form := url.Values{"session": {f.Session}, "limit": {strconv.Itoa(f.Limit)}}
				if !f.Since.IsZero() {
					form.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
				}
				err = remote.call(cmd.Context(), http.MethodGet, "/admin/audit", form, &recs)
			} else {
				err = withStore(cfg, func(st memory.Store) error {
					recs, err = st.ListAudit(cmd.Context(), f)
					return err
				})
			}
			if err != nil {
				return err
			}
			if asJSON {
				return a.writeJSON(auditJSON{Records: nonNil(recs)})
			}
			tw := tabwriter.NewWriter(a.listOut(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tACTOR\tACTION\tSESSION\tDETAIL\tERROR")
			for _, r := range recs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(time.DateTime), orDash(r.Actor),
					r.Action, orDash(r.Session), clip(r.Detail, 80), orDash(r.Error))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "only records of this session")
	cmd.Flags().StringVar(&since, "since", "", "only records newer than this (e.g. 24h, 7d)")
	cmd.Flags().IntVar(&limit, "limit", 200, "at most this many records")
	addJSONFlag(cmd, &asJSON)
	return cmd
}
