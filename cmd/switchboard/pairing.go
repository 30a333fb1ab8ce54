package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/memory"
)

func (a *app) pairingCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "pairing", Short: "List and approve pairing codes of unknown users"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List pending pairing codes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var reqs []hub.PairingRequest
			cfg, remote, err := a.locate(needData)
			if err != nil {
				return err
			}
			if remote != nil {
				err = remote.call(cmd.Context(), http.MethodGet, "/admin/pairing", nil, &reqs)
			} else {
				err = withStore(cfg, func(st memory.Store) error {
					reqs, err = hub.NewPairing(st, nil).Pending(cmd.Context())
					return err
				})
			}
			if err != nil {
				return err
			}
			if asJSON {
				return a.writeJSON(pairingJSON{Requests: nonNil(reqs)})
			}
			if len(reqs) == 0 {
				fmt.Fprintln(a.listOut(), "no pending pairing codes")
				return nil
			}
			tw := tabwriter.NewWriter(a.listOut(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CODE\tUSER\tNAME\tEXPIRES")
			for _, r := range reqs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Code, r.User, orDash(r.Name), r.Expires.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	addJSONFlag(list, &asJSON)
	cmd.AddCommand(list, &cobra.Command{
		Use:   "approve CODE",
		Short: "Approve a pairing code (works with the daemon running or stopped)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req hub.PairingRequest
			cfg, remote, err := a.locate(needData)
			if err != nil {
				return err
			}
			if remote != nil {
				err = remote.call(cmd.Context(), http.MethodPost, "/admin/pairing/approve", url.Values{"code": {args[0]}}, &req)
			} else {
				err = withStore(cfg, func(st memory.Store) error {
					req, err = hub.NewPairing(st, nil).Approve(cmd.Context(), args[0])
					if errors.Is(err, hub.ErrUnknownCode) {
						return usageErr(err)
					}
					if err != nil {
						return err
					}
					_ = st.Audit(cmd.Context(), memory.AuditRecord{Time: time.Now(), Actor: "cli", Action: "pairing.approve",
						Session: req.Target, Detail: "approved " + req.User})
					return nil
				})
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.listOut(), "approved %s (%s)\n", req.User, orDash(req.Name))
			return nil
		},
	})
	return cmd
}
