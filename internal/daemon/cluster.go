package daemon

// Replicas. With storage.backend postgres the daemon is one of N identical
// replicas sharing the database; internal/cluster coordinates them and this
// file wires it in (with bolt nothing here runs, except several Discord
// shards in one process):
//
//   - The scheduler (heartbeat, jobs) ticks on one leader: Scheduler.Lead
//     runs under the "scheduler" lease, and every fire is claimed through
//     cluster.Fire (heartbeat.SlotClaimer), so a leader change neither
//     repeats nor skips a slot.
//   - Telegram long polling runs under the "telegram-poll" lease: exactly
//     one replica calls getUpdates. The adapter has no hook before it
//     confirms an offset (the next getUpdates does that), so the fence is
//     the lease's cancellation: Hold cancels Run's context before the lease
//     can expire unrenewed, Run's getUpdates uses that context, and a
//     replica that lost the lease cannot send another getUpdates. An offset
//     only ever moves past updates already in the inbox, so even a late
//     confirmation loses nothing. Telegram webhook mode runs everywhere.
//   - Discord runs channels.discord.shards gateway shards, shard i under
//     the "discord-shard-<i>" lease: each replica runs the shards it holds.
//     The registered channel (shard 0's adapter) sends for all of them.
//   - Slack (Socket Mode and HTTP) and webhooks run on every replica.
//
// A channel that waits for a lease another replica holds is "standby": the
// replica stays ready (/readyz) without it, and /status says so.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// Lease names.
const (
	leaseScheduler    = "scheduler"
	leaseTelegramPoll = "telegram-poll"
)

// discordShardLease is the lease of Discord gateway shard i.
func discordShardLease(i int) string { return fmt.Sprintf("discord-shard-%d", i) }

// jobsChannel is the NOTIFY channel on which a replica that changed the
// runtime jobs tells the scheduler's leader to reschedule them.
const jobsChannel = "switchboard_jobs"

// clusterOpenTimeout bounds connecting and migrating the cluster schema.
const clusterOpenTimeout = 2 * time.Minute

// clusterState is the daemon's part in the cluster; c is nil with bolt.
type clusterState struct {
	c       *cluster.Cluster
	heldVec *prometheus.GaugeVec
	mu      sync.Mutex
	held    map[string]bool // leases this replica holds now
	alive   int             // replicas alive at the last refresh
}

// openCluster joins the cluster when storage.backend is postgres.
func (d *Daemon) openCluster(cfg *config.Config) error {
	if cfg.Storage.Backend != "postgres" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterOpenTimeout)
	defer cancel()
	c, err := cluster.Open(ctx, cfg.Storage.Postgres.URL.Value(), cluster.Options{LeaseTTL: cfg.Cluster.LeaseTTL, Logger: d.log})
	if err != nil {
		return err
	}
	s := &d.cluster
	s.c, s.held = c, map[string]bool{}
	s.heldVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "switchboard_cluster_lease_held",
		Help: "1 while this replica holds the named lease (scheduler, telegram-poll, discord-shard-<i>)."}, []string{"name"})
	d.metrics.Registry().MustRegister(s.heldVec)
	d.metrics.Gauge("switchboard_cluster_replicas", "Replicas alive (heartbeat newer than cluster.lease_ttl), as last seen by this replica.",
		func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(s.alive)
		})
	return nil
}

// Cluster is the replica's cluster handle; nil with bolt.
func (d *Daemon) Cluster() *cluster.Cluster { return d.cluster.c }

// closeCluster leaves the cluster (after every lease holder returned).
func (d *Daemon) closeCluster() {
	if d.cluster.c != nil {
		d.cluster.c.Close()
	}
}

// clusterClaimer is the scheduler's heartbeat.SlotClaimer.
type clusterClaimer struct{ c *cluster.Cluster }

func (c clusterClaimer) Claim(ctx context.Context, job string, slot time.Time) (bool, error) {
	return c.c.Fire(ctx, job, slot)
}

// startScheduler starts the scheduler: at once on a single host, under the
// scheduler lease with replicas (owned by bg, ends with ctx).
func (d *Daemon) startScheduler(ctx context.Context, bg *sync.WaitGroup) {
	if d.cluster.c == nil {
		if err := d.sched.Start(ctx); err != nil {
			d.log.Error("start the scheduler", "err", err)
		}
		return
	}
	bg.Go(func() {
		_ = d.cluster.leased(ctx, leaseScheduler, func(ctx context.Context) error {
			if err := d.sched.Lead(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("lead the scheduler", "err", err)
				<-ctx.Done() // Stop ran: shutting down
			}
			return nil
		})
	})
	bg.Go(func() { d.cluster.refresh(ctx, d) })
	bg.Go(func() { d.cluster.c.Listen(ctx, jobsChannel, func(string) { d.sched.Resync() }) })
}

// jobsChanged tells the leader (maybe another replica) that the runtime
// jobs changed; its jobs sweep would find them within a minute anyway.
func (d *Daemon) jobsChanged() {
	if d.cluster.c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.cluster.c.TTL())
	defer cancel()
	if err := d.cluster.c.Notify(ctx, jobsChannel, d.cluster.c.ReplicaID()); err != nil {
		d.log.Warn("tell the scheduler's leader about changed jobs", "err", err)
	}
}

// leased runs fn while this replica holds lease name, and again whenever it
// gets the lease back, until ctx ends (nil) or fn returns by itself with
// its context alive (fn's error, for the channel supervisor's backoff).
func (s *clusterState) leased(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	s.c.Hold(hctx, name, func(wctx context.Context, _ int64) {
		s.setHeld(name, true)
		defer s.setHeld(name, false)
		err = fn(wctx)
		if wctx.Err() == nil {
			cancel()
		}
	})
	return err
}

func (s *clusterState) setHeld(name string, on bool) {
	s.mu.Lock()
	s.held[name] = on
	s.mu.Unlock()
	v := 0.0
	if on {
		v = 1
	}
	s.heldVec.WithLabelValues(name).Set(v)
}

func (s *clusterState) isHeld(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[name]
}

// refresh keeps the replica count (metrics) current every TTL/3.
func (s *clusterState) refresh(ctx context.Context, d *Daemon) {
	t := time.NewTicker(s.c.TTL() / 3)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, s.c.TTL())
		reps, err := s.c.Replicas(qctx)
		cancel()
		if err == nil {
			alive := 0
			for _, r := range reps {
				if r.Alive {
					alive++
				}
			}
			s.mu.Lock()
			s.alive = alive
			s.mu.Unlock()
		}
		if err != nil && ctx.Err() == nil {
			d.log.Debug("cluster status refresh", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// superviseChannel builds ch's supervisor: Telegram polling under its
// lease with replicas, Discord as shards (under leases with replicas).
func (d *Daemon) superviseChannel(ch channels.Channel) *supervisor {
	sup := newSupervisor(ch, d.handler, d.log, d.opts.RestartBackoff, time.Minute)
	cfg := d.config()
	switch a := ch.(type) {
	case *telegram.Adapter:
		if d.cluster.c == nil || cfg.Channels.Telegram.Mode == telegram.ModeWebhook {
			break
		}
		sup.runFn = func(ctx context.Context, sink channels.Sink) error {
			return d.cluster.leased(ctx, leaseTelegramPoll, func(ctx context.Context) error { return a.Run(ctx, sink) })
		}
		sup.health = func() (bool, bool) {
			held := d.cluster.isHeld(leaseTelegramPoll)
			return held && a.Ready(), !held
		}
	case *discord.Adapter:
		if d.cluster.c != nil || cfg.Channels.Discord.Shards > 1 {
			d.shardDiscord(sup, a, cfg)
		}
	}
	return sup
}

// shardDiscord makes sup run every gateway shard: shard 0 is the registered
// adapter, the others are built here; with replicas each under its lease.
func (d *Daemon) shardDiscord(sup *supervisor, shard0 *discord.Adapter, cfg *config.Config) {
	shards := []*discord.Adapter{shard0}
	for i := 1; i < cfg.Channels.Discord.Shards; i++ {
		a, err := discord.New(d.discordOptions(cfg, i))
		if err != nil { // the same options as shard 0's, which passed
			d.log.Error("discord shard not built", "shard", i, "err", err)
			continue
		}
		shards = append(shards, a)
	}
	sup.runFn = func(ctx context.Context, sink channels.Sink) error { return d.runShards(ctx, sink, shards) }
	sup.health = func() (ready, standby bool) {
		ready, standby = true, true
		for i, a := range shards {
			if d.cluster.c != nil && !d.cluster.isHeld(discordShardLease(i)) {
				continue
			}
			standby = false
			ready = ready && a.Ready()
		}
		return ready && !standby, standby
	}
}

// runShards runs the shards until ctx ends or one of them fails, which
// stops the others (the supervisor restarts them all).
func (d *Daemon) runShards(ctx context.Context, sink channels.Sink, shards []*discord.Adapter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(shards))
	var wg sync.WaitGroup
	for i, a := range shards {
		wg.Go(func() {
			defer cancel()
			run := func(ctx context.Context) error { return a.Run(ctx, sink) }
			var err error
			if d.cluster.c != nil {
				err = d.cluster.leased(ctx, discordShardLease(i), run)
			} else {
				err = run(ctx)
			}
			if err != nil {
				errs <- fmt.Errorf("shard %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// shardCursors keeps the cursors of Discord shard i of n > 1 under a key
// of its own ("discord/cursors/shard-1-of-2"): shards run on different
// replicas and would overwrite each other's. Shard 0 keeps the plain key.
func shardCursors(kv discord.CursorStore, shard, n int) discord.CursorStore {
	if n <= 1 || shard == 0 {
		return kv
	}
	return suffixKV{kv: kv, suffix: fmt.Sprintf("/shard-%d-of-%d", shard, n)}
}

type suffixKV struct {
	kv     discord.CursorStore
	suffix string
}

func (s suffixKV) KVGet(ctx context.Context, key string) ([]byte, bool, error) {
	return s.kv.KVGet(ctx, key+s.suffix)
}

func (s suffixKV) KVPut(ctx context.Context, key string, val []byte) error {
	return s.kv.KVPut(ctx, key+s.suffix, val)
}

// clusterFacts are the /status lines about the cluster ("" with bolt).
func (d *Daemon) clusterFacts(ctx context.Context) string {
	c := d.cluster.c
	if c == nil {
		return ""
	}
	st, err := c.Status(ctx)
	if err != nil {
		return fmt.Sprintf("cluster: replica %s; status unavailable: %v\n", c.ReplicaID(), err)
	}
	return FormatClusterStatus(st, c.TTL())
}

// FormatClusterStatus renders a cluster status for people (/status and
// `switchboard cluster status`).
func FormatClusterStatus(st cluster.Status, ttl time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster: %d of %d replicas alive (lease ttl %s)", st.AliveReplicas(), len(st.Replicas), ttl)
	if st.ReplicaID != "" {
		fmt.Fprintf(&b, "; this is %s", st.ReplicaID)
	}
	b.WriteString("\n")
	for _, r := range st.Replicas {
		state := "alive"
		if !r.Alive {
			state = "gone, last seen " + age(st.Now.Sub(r.LastSeen)) + " ago"
		}
		fmt.Fprintf(&b, "  replica %s: %s, up %s\n", r.ID, state, age(st.Now.Sub(r.Started)))
	}
	leases := append([]cluster.Lease(nil), st.Leases...)
	sort.Slice(leases, func(i, j int) bool { return leases[i].Name < leases[j].Name })
	sessions := map[string]int{} // per-session claims, counted per holder
	for _, l := range leases {
		if strings.HasPrefix(l.Name, "session:") {
			if l.Held {
				sessions[l.Holder]++
			}
			continue
		}
		if l.Held {
			fmt.Fprintf(&b, "  lease %s: %s (token %d, expires in %s)\n", l.Name, l.Holder, l.Token, age(l.Expires.Sub(st.Now)))
		} else {
			fmt.Fprintf(&b, "  lease %s: free (token %d)\n", l.Name, l.Token)
		}
	}
	holders := make([]string, 0, len(sessions))
	total := 0
	for h, n := range sessions {
		holders = append(holders, fmt.Sprintf("%s %d", h, n))
		total += n
	}
	sort.Strings(holders)
	fmt.Fprintf(&b, "  sessions claimed: %d", total)
	if total > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(holders, ", "))
	}
	b.WriteString("\n")
	return b.String()
}

// age renders a duration coarsely for status lines.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// slotClaimer is the scheduler's claimer: nil (single host) with bolt.
func (d *Daemon) slotClaimer() heartbeat.SlotClaimer {
	if d.cluster.c == nil {
		return nil
	}
	return clusterClaimer{d.cluster.c}
}
