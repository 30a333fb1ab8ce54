package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory"
)

func (a *app) pairingCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "pairing", Short: "List and approve pairing codes of unknown users"}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List pending pairing codes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var reqs []channels.PairingRequest
			st, cfg, err := a.openStore()
			switch {
			case errors.Is(err, memory.ErrInUse):
				body, aerr := a.adminCall(cfg, http.MethodGet, "/admin/pairing", nil)
				if aerr != nil {
					return fmt.Errorf("%w (and the running daemon did not answer: %v)", err, aerr)
				}
				if err := json.Unmarshal(body, &reqs); err != nil {
					return fmt.Errorf("decode daemon answer: %w", err)
				}
			case err != nil:
				return err
			default:
				defer st.Close()
				reqs, err = channels.NewPairing(st, nil).Pending(cmd.Context())
				if err != nil {
					return err
				}
			}
			if len(reqs) == 0 {
				fmt.Fprintln(a.stdout, "no pending pairing codes")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CODE\tUSER\tNAME\tEXPIRES")
			for _, r := range reqs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Code, r.User, orDash(r.Name), r.Expires.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}, &cobra.Command{
		Use:   "approve CODE",
		Short: "Approve a pairing code (works with the daemon running or stopped)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req channels.PairingRequest
			st, cfg, err := a.openStore()
			switch {
			case errors.Is(err, memory.ErrInUse):
				body, aerr := a.adminCall(cfg, http.MethodPost, "/admin/pairing/approve", url.Values{"code": {args[0]}})
				if aerr != nil {
					return aerr
				}
				if err := json.Unmarshal(body, &req); err != nil {
					return fmt.Errorf("decode daemon answer: %w", err)
				}
			case err != nil:
				return err
			default:
				defer st.Close()
				req, err = channels.NewPairing(st, nil).Approve(cmd.Context(), args[0])
				if errors.Is(err, channels.ErrUnknownCode) {
					return usageErr(err)
				}
				if err != nil {
					return err
				}
				_ = st.Audit(cmd.Context(), memory.AuditRecord{Time: time.Now(), Actor: "cli", Action: "pairing.approve",
					Session: req.Target, Detail: "approved " + req.User})
			}
			fmt.Fprintf(a.stdout, "approved %s (%s)\n", req.User, orDash(req.Name))
			return nil
		},
	})
	return cmd
}

// adminCall talks to the running daemon's local admin endpoint.
func (a *app) adminCall(cfg *config.Config, method, path string, form url.Values) ([]byte, error) {
	if cfg == nil || cfg.Server.Listen == "" {
		return nil, errors.New("server.listen is empty, so the daemon has no admin endpoint to ask; set server.listen (e.g. 127.0.0.1:8787) and restart it")
	}
	host := cfg.Server.Listen
	if strings.HasPrefix(host, "0.0.0.0:") || strings.HasPrefix(host, ":") {
		host = "127.0.0.1:" + host[strings.LastIndex(host, ":")+1:]
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, "http://"+host+path, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if tok := adminToken(cfg); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, daemonDown(host, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, daemonRefused(resp.StatusCode, out)
	}
	return out, nil
}
