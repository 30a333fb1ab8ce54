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
// commands go through its admin endpoint; otherwise they open the store.
func (a *app) jobsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "List, run, pause, resume and delete scheduled jobs"}
	cmd.AddCommand(&cobra.Command{
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
			if len(rows) == 0 {
				fmt.Fprintln(a.stdout, "no jobs")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
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
	})
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
				fmt.Fprintln(a.stdout, msg)
				return nil
			},
		})
	}
	return cmd
}

// withJobs runs local against a daemon built on the store (channels not
// connected) or, when the daemon is running, asks it over the admin endpoint.
func (a *app) withJobs(ctx context.Context, method, path string, form url.Values, out any, local func(*daemon.Daemon) (any, error)) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if method == http.MethodGet { // read-only: never create the data directory
		if err := requireData(cfg); err != nil {
			return err
		}
	}
	d, err := daemon.New(ctx, daemon.Options{Config: cfg, Logger: a.logger(cfg, levelWarn)})
	if errors.Is(err, memory.ErrInUse) {
		body, aerr := a.adminCall(cfg, method, path, form)
		var ee *exitError
		if errors.As(aerr, &ee) { // the daemon answered: the request was wrong
			return aerr
		}
		if aerr != nil {
			return fmt.Errorf("the daemon is running and did not answer: %w", aerr)
		}
		return json.Unmarshal(body, out)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := local(d)
	if err != nil {
		return usageErr(err)
	}
	raw, _ := json.Marshal(v)
	return json.Unmarshal(raw, out)
}
