package ui

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// clusterTimeout bounds the cluster status query of one overview render.
const clusterTimeout = 2 * time.Second

// clusterView is the overview's "Cluster" block: present only when the
// daemon runs as one of several replicas (storage.backend postgres).
type clusterView struct {
	Alive, Total int
	This         string // this replica's id
	Replicas     []replicaView
	Free         []string // leases nobody holds (per-session claims left out)
	Unavailable  bool     // the database did not answer
}

// replicaView is one replica row: its state and the leases it holds.
type replicaView struct {
	ID, Host string
	This     bool
	Alive    bool
	Seen     time.Duration // since its last heartbeat (when gone)
	Up       time.Duration
	Leases   []string // named leases it holds (scheduler, telegram-poll, discord-shard-<i>)
	Sessions int      // per-session claims it holds
}

// clusterData reads the cluster status from the daemon; nil on a single
// host.
func (s *Server) clusterData(ctx context.Context) *clusterView {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	st, ok, err := s.o.Backend.Cluster(ctx)
	if !ok {
		return nil
	}
	if err != nil {
		// The error may name the database: it goes to the log (at debug: the
		// live overview asks every LiveInterval), never to the page.
		s.log.Debug("cluster status for the overview", "err", redact.Text(err.Error()))
		return &clusterView{Unavailable: true}
	}
	return newClusterView(st)
}

// newClusterView arranges a cluster status by replica.
func newClusterView(st cluster.Status) *clusterView {
	v := &clusterView{Alive: st.AliveReplicas(), Total: len(st.Replicas), This: st.ReplicaID}
	held := map[string][]string{}
	sessions := map[string]int{}
	for _, l := range st.Leases {
		switch {
		case strings.HasPrefix(l.Name, "session:"):
			if l.Held {
				sessions[l.Holder]++
			}
		case l.Held:
			held[l.Holder] = append(held[l.Holder], l.Name)
		default:
			v.Free = append(v.Free, l.Name)
		}
	}
	for _, r := range st.Replicas {
		rv := replicaView{ID: r.ID, Host: r.Host, This: r.ID == st.ReplicaID, Alive: r.Alive,
			Seen: st.Now.Sub(r.LastSeen), Up: st.Now.Sub(r.Started), Leases: held[r.ID], Sessions: sessions[r.ID]}
		sort.Strings(rv.Leases)
		v.Replicas = append(v.Replicas, rv)
	}
	sort.Strings(v.Free)
	return v
}
