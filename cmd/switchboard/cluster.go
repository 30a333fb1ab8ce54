package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// clusterStatusTimeout bounds `switchboard cluster status` (connecting,
// the schema check, two queries).
const clusterStatusTimeout = 30 * time.Second

func (a *app) clusterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Replicas sharing one PostgreSQL database (storage.backend: postgres)"}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "List the replicas, who holds which lease, and the inbox backlog",
		Long: `Reads the cluster's state straight from the database in storage.postgres.url (no running
daemon needed): every replica registered (alive while its heartbeat is newer than
cluster.lease_ttl), every lease (scheduler, telegram-poll, discord-shard-<i>) with its holder,
fencing token and expiry, and how many accepted messages wait in the inbox.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cfg.Storage.Backend != "postgres" {
				return usagef("storage.backend is %q: replicas need postgres (one process with bolt has no cluster)", cfg.Storage.Backend)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), clusterStatusTimeout)
			defer cancel()
			return a.clusterStatus(ctx, cfg, asJSON)
		},
	}
	addJSONFlag(status, &asJSON)
	cmd.AddCommand(status)
	return cmd
}

// clusterStatus prints the cluster's state and the inbox backlog (asJSON:
// as one JSON document, once both are read).
func (a *app) clusterStatus(ctx context.Context, cfg *config.Config, asJSON bool) error {
	log := a.logger(cfg, levelWarn)
	c, err := cluster.Open(ctx, cfg.Storage.Postgres.URL.Value(), cluster.Options{Passive: true, LeaseTTL: cfg.Cluster.LeaseTTL, Logger: log})
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	st.ReplicaID = "" // a passive look, not a replica
	if !asJSON {
		fmt.Fprint(a.listOut(), daemon.FormatClusterStatus(st, c.TTL()))
	}
	store, err := daemon.OpenStore(cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()
	pending, err := store.InboxPending(ctx)
	if err != nil {
		return fmt.Errorf("inbox backlog: %w", err)
	}
	if asJSON {
		return a.writeJSON(clusterJSON{ClusterReport: daemon.ReportCluster(st, c.TTL()), InboxBacklog: len(pending)})
	}
	fmt.Fprintf(a.stdout, "inbox backlog: %d message(s) accepted and not yet answered\n", len(pending))
	return nil
}
