package daemon

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/redact"
	"github.com/switchboard-bot/switchboard/memory"
)

// StatusReport is /admin/status?format=json and `switchboard status
// --json`: the facts of StatusText as fields. Secrets are redacted as in the
// text (no API key, no URL credentials, adapter errors through redact.Text).
type StatusReport struct {
	Bot        string          `json:"bot"`
	Channels   []ChannelReport `json:"channels"`
	Model      ModelReport     `json:"model"`
	Storage    StorageReport   `json:"storage"`
	Sessions   *int            `json:"sessions"` // null when the store did not answer
	Cluster    *ClusterReport  `json:"cluster,omitempty"`
	Messages   MessageCounts   `json:"messages"`
	Turns      TurnCounts      `json:"turns"`
	Deliveries DeliveryCounts  `json:"deliveries"`
	// Tasks are the background tasks queued and running (every replica's);
	// null when the store did not answer.
	Tasks *memory.TaskCounts `json:"tasks"`
}

// ChannelReport is one channel's health.
type ChannelReport struct {
	Name      string `json:"name"`
	State     string `json:"state"` // connected, standby, not_connected
	Restarts  int    `json:"restarts"`
	LastError string `json:"last_error,omitempty"`
}

// ModelReport names the model endpoint, never its key, and the state of
// every endpoint of the failover chain (primary first): up, down or
// cooling down, and which model answered last.
type ModelReport struct {
	Name      string                 `json:"name"`
	Endpoint  string                 `json:"endpoint"`
	APIKeySet bool                   `json:"api_key_set"`
	Endpoints []agent.EndpointStatus `json:"endpoints"`
}

// StorageReport is the store and whether it serves.
type StorageReport struct {
	Backend       string     `json:"backend"`
	Path          string     `json:"path"`
	OK            bool       `json:"ok"`
	Reason        string     `json:"reason,omitempty"`
	Since         *time.Time `json:"since,omitempty"`
	WritesOK      bool       `json:"writes_ok"`
	WritesReason  string     `json:"writes_reason,omitempty"`
	WritesFailing *time.Time `json:"writes_failing_since,omitempty"`
}

// MessageCounts are the inbound counters since start.
type MessageCounts struct {
	Received   uint64 `json:"received"`
	Duplicates uint64 `json:"duplicates"`
	Ignored    uint64 `json:"ignored"`
	Denied     uint64 `json:"denied"`
}

// TurnCounts are the agent turns since start and the queues now.
type TurnCounts struct {
	Total          uint64 `json:"total"`
	Failed         uint64 `json:"failed"`
	ActiveSessions int    `json:"active_sessions"`
	QueuedMessages int    `json:"queued_messages"`
}

// DeliveryCounts are the outbound counters since start.
type DeliveryCounts struct {
	Sent        uint64 `json:"sent"`
	Edited      uint64 `json:"edited"`
	Retried     uint64 `json:"retried"`
	Failed      uint64 `json:"failed"`
	Resent      uint64 `json:"resent"`
	LastFailure string `json:"last_failure,omitempty"`
}

// ClusterReport is a cluster status as fields (FormatClusterStatus's facts).
type ClusterReport struct {
	ReplicaID       string          `json:"replica_id,omitempty"` // the replica that asked ("" for the CLI's passive look)
	Now             time.Time       `json:"now"`                  // the database's clock
	LeaseTTLSeconds float64         `json:"lease_ttl_seconds"`
	AliveReplicas   int             `json:"alive_replicas"`
	Replicas        []ReplicaReport `json:"replicas"`
	Leases          []LeaseReport   `json:"leases"`           // without the per-session claims
	SessionsClaimed map[string]int  `json:"sessions_claimed"` // holder → sessions it claims
	Error           string          `json:"error,omitempty"`  // the status could not be read
}

// ReplicaReport is one registered replica.
type ReplicaReport struct {
	ID       string    `json:"id"`
	Host     string    `json:"host"`
	Started  time.Time `json:"started"`
	LastSeen time.Time `json:"last_seen"`
	Alive    bool      `json:"alive"`
}

// LeaseReport is one lease.
type LeaseReport struct {
	Name    string    `json:"name"`
	Holder  string    `json:"holder,omitempty"`
	Held    bool      `json:"held"`
	Token   int64     `json:"token"`
	Expires time.Time `json:"expires"`
}

// ReportCluster turns a cluster status into a ClusterReport.
func ReportCluster(st cluster.Status, ttl time.Duration) ClusterReport {
	r := ClusterReport{ReplicaID: st.ReplicaID, Now: st.Now, LeaseTTLSeconds: ttl.Seconds(), AliveReplicas: st.AliveReplicas(),
		Replicas: []ReplicaReport{}, Leases: []LeaseReport{}, SessionsClaimed: map[string]int{}}
	for _, rep := range st.Replicas {
		r.Replicas = append(r.Replicas, ReplicaReport{ID: rep.ID, Host: rep.Host, Started: rep.Started, LastSeen: rep.LastSeen, Alive: rep.Alive})
	}
	for _, l := range st.Leases {
		if strings.HasPrefix(l.Name, "session:") {
			if l.Held {
				r.SessionsClaimed[l.Holder]++
			}
			continue
		}
		lr := LeaseReport{Name: l.Name, Held: l.Held, Token: l.Token, Expires: l.Expires}
		if l.Held {
			lr.Holder = l.Holder
		}
		r.Leases = append(r.Leases, lr)
	}
	sort.Slice(r.Leases, func(i, j int) bool { return r.Leases[i].Name < r.Leases[j].Name })
	return r
}

// StatusReport gathers what StatusText says, as fields. The store is asked
// with the same bound as statusFacts.
func (d *Daemon) StatusReport(ctx context.Context) StatusReport {
	ctx, cancel := context.WithTimeout(ctx, max(3*d.storeProbeEvery(), 5*time.Second))
	defer cancel()
	cfg := d.config()
	rep := StatusReport{Bot: cfg.Bot.Name, Channels: []ChannelReport{}}
	for name, st := range d.ChannelStates() {
		c := ChannelReport{Name: name, State: "connected", Restarts: st.Restarts}
		switch {
		case st.Standby:
			c.State = "standby"
		case !st.Ready:
			c.State = "not_connected"
		}
		if st.Restarts > 0 {
			c.LastError = redact.Text(st.LastErr) // an adapter's error can carry a URL with a token
		}
		rep.Channels = append(rep.Channels, c)
	}
	sort.Slice(rep.Channels, func(i, j int) bool { return rep.Channels[i].Name < rep.Channels[j].Name })
	endpoint := config.RedactURL(cfg.LLM.BaseURL)
	if endpoint == "" {
		endpoint = "OpenAI"
	}
	rep.Model = ModelReport{Name: cfg.LLM.Model, Endpoint: endpoint, APIKeySet: cfg.LLM.APIKey.IsSet(),
		Endpoints: d.modelEndpoints()}
	rep.Storage = StorageReport{Backend: cfg.Storage.Backend, Path: d.store.Path(), OK: true, WritesOK: true}
	if rep.Storage.Backend == "" {
		rep.Storage.Backend = "bolt"
	}
	if h := d.storeHealth(); !h.OK {
		since := h.Since.UTC()
		rep.Storage.OK, rep.Storage.Reason, rep.Storage.Since = false, h.Reason, &since
	}
	if w := d.handler.StorageHealth(); !w.OK {
		since := w.Since.UTC()
		rep.Storage.WritesOK, rep.Storage.WritesReason, rep.Storage.WritesFailing = false, w.Reason, &since
	}
	if sessions, err := d.store.ListSessions(ctx); err == nil {
		n := len(sessions)
		rep.Sessions = &n
	}
	if c := d.cluster.c; c != nil {
		st, err := c.Status(ctx)
		cr := ReportCluster(st, c.TTL())
		if err != nil {
			cr = ClusterReport{ReplicaID: c.ReplicaID(), LeaseTTLSeconds: c.TTL().Seconds(), Replicas: []ReplicaReport{},
				Leases: []LeaseReport{}, SessionsClaimed: map[string]int{}, Error: err.Error()}
		}
		rep.Cluster = &cr
	}
	hs := d.handler.Stats()
	rep.Messages = MessageCounts{Received: hs.Received, Duplicates: hs.Duplicates, Ignored: hs.Ignored, Denied: hs.Denied}
	rep.Turns = TurnCounts{Total: hs.Turns, Failed: hs.TurnErrors, ActiveSessions: hs.ActiveSessions, QueuedMessages: hs.QueueDepth}
	o := d.deliver.Out.Stats()
	rep.Deliveries = DeliveryCounts{Sent: o.Sent, Edited: o.Edited, Retried: o.Retried, Failed: o.Failed, Resent: o.Resent, LastFailure: o.LastFailure}
	rep.Tasks = d.taskCounts(ctx)
	return rep
}
