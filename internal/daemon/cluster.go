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
	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/heartbeat"
	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/config"
)

// leaseScheduler is the scheduler's lease; the platforms name their own
// (platform.Runner).
const leaseScheduler = "scheduler"

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

// superviseChannel builds ch's supervisor. A platform whose descriptor
// splits its receiving into Runners (Telegram polling, Discord shards) runs
// each under its lease with replicas, and several of them side by side
// without; otherwise the channel runs as is.
func (d *Daemon) superviseChannel(ch channels.Channel) *supervisor {
	sup := newSupervisor(ch, d.handler, d.log, d.opts.RestartBackoff, time.Minute)
	cfg := d.config()
	desc, ok := cfg.Platforms().Lookup(ch.Name())
	sec := cfg.Channels[ch.Name()]
	if !ok || desc.Runners == nil || sec == nil {
		return sup
	}
	runners, err := desc.Runners(context.Background(), sec, d.platformDeps(cfg), ch)
	if err != nil { // the options passed for the first runner: log, run the others
		d.log.Error("channel runner not built", "channel", ch.Name(), "err", err)
	}
	if len(runners) == 0 || (d.cluster.c == nil && len(runners) == 1) {
		return sup
	}
	sup.runFn = func(ctx context.Context, sink channels.Sink) error { return d.runRunners(ctx, sink, runners) }
	sup.health = func() (ready, standby bool) {
		ready, standby = true, true
		for _, r := range runners {
			if d.cluster.c != nil && !d.cluster.isHeld(r.Lease) {
				continue
			}
			standby = false
			ready = ready && r.Ready()
		}
		return ready && !standby, standby
	}
	return sup
}

// runRunners runs the runners until ctx ends or one of them fails, which
// stops the others (the supervisor restarts them all).
func (d *Daemon) runRunners(ctx context.Context, sink channels.Sink, runners []platform.Runner) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runners))
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() {
			defer cancel()
			run := func(ctx context.Context) error { return r.Run(ctx, sink) }
			var err error
			if d.cluster.c != nil {
				err = d.cluster.leased(ctx, r.Lease, run)
			} else {
				err = run(ctx)
			}
			if err != nil {
				errs <- fmt.Errorf("%s: %w", r.Lease, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
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
