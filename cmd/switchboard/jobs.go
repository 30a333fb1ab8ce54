package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/memory"
)

// jobsCmd lists and controls scheduled jobs. With the daemon running the
// commands go through its admin API; otherwise they open the store (locate
// decides).
func (a *app) jobsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "List, run, pause, resume and delete scheduled jobs"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List jobs with their next run and last result",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rows []daemon.JobRow
			err := a.withJobs(cmd.Context(), http.MethodGet, "/admin/jobs", nil, &rows, func(d *daemon.Daemon) (any, error) {
				return d.JobRows(cmd.Context())
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.writeJSON(jobsDoc(rows))
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.listOut(), "no jobs")
				return nil
			}
			tw := tabwriter.NewWriter(a.listOut(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tSOURCE\tSCHEDULE\tNEXT\tLAST\tSTATE")
			for _, r := range rows {
				next := "-"
				if !r.Next.IsZero() {
					next = r.Next.Local().Format(time.DateTime)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Kind, r.Source, r.Schedule, next, orDash(r.LastStatus), r.State)
			}
			return tw.Flush()
		},
	}
	addJSONFlag(list, &asJSON)
	cmd.AddCommand(list)
	for _, action := range []struct{ name, short string }{
		{"run", "Run a job now and deliver its result"},
		{"pause", "Pause a job"},
		{"resume", "Resume a paused job"},
		{"delete", "Delete a job created from a chat"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   action.name + " NAME",
			Short: action.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				var msg string
				err := a.withJobs(cmd.Context(), http.MethodPost, "/admin/jobs/"+action.name,
					url.Values{"name": {args[0]}}, &msg, func(d *daemon.Daemon) (any, error) {
						return d.JobAction(cmd.Context(), action.name, args[0])
					})
				if err != nil {
					return err
				}
				fmt.Fprintln(a.listOut(), msg)
				return nil
			},
		})
	}
	return cmd
}

// withJobs asks the running daemon over its admin API when locate finds one,
// or runs local against a daemon built on the store (channels not connected).
// Listing needs existing data; the actions may create it (a configured job
// can run before the daemon ever did).
func (a *app) withJobs(ctx context.Context, method, path string, form url.Values, out any, local func(*daemon.Daemon) (any, error)) error {
	n := mayCreate
	if method == http.MethodGet { // read-only: never create the data directory
		n = needData
	}
	cfg, remote, err := a.locate(n)
	if err != nil {
		return err
	}
	if remote != nil {
		return remote.call(ctx, method, path, form, out)
	}
	d, err := daemon.New(ctx, daemon.Options{Config: cfg, Logger: a.logger(cfg, levelWarn)})
	if errors.Is(err, memory.ErrInUse) {
		return fmt.Errorf("%w\nthe daemon started meanwhile: run the command again", err)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := local(d)
	if err != nil {
		return usageErr(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
