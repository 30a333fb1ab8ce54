package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/cluster"
)

// The Cluster block groups the leases by the replica holding them; a gone
// replica shows how long ago it was seen; per-session claims are counted,
// not listed; free leases are listed apart.
func TestClusterViewByReplica(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	st := cluster.Status{ReplicaID: "r1", Now: now,
		Replicas: []cluster.Replica{
			{ID: "r1", Host: "h1", Started: now.Add(-time.Hour), LastSeen: now, Alive: true},
			{ID: "r2", Host: "h2", Started: now.Add(-2 * time.Hour), LastSeen: now.Add(-90 * time.Second)},
		},
		Leases: []cluster.Lease{
			{Name: "telegram-poll", Holder: "r1", Held: true},
			{Name: "scheduler", Holder: "r1", Held: true},
			{Name: "discord-shard-0", Holder: "r2"}, // expired: free
			{Name: "session:web:a", Holder: "r1", Held: true},
			{Name: "session:web:b", Holder: "r1", Held: true},
		}}
	v := newClusterView(st)
	if v.Alive != 1 || v.Total != 2 || v.This != "r1" {
		t.Fatalf("summary = %d of %d, this %q", v.Alive, v.Total, v.This)
	}
	tests := []struct {
		id       string
		this     bool
		alive    bool
		leases   string
		sessions int
		seen     time.Duration
	}{
		{"r1", true, true, "scheduler,telegram-poll", 2, 0},
		{"r2", false, false, "", 0, 90 * time.Second},
	}
	for i, tc := range tests {
		r := v.Replicas[i]
		if r.ID != tc.id || r.This != tc.this || r.Alive != tc.alive || strings.Join(r.Leases, ",") != tc.leases ||
			r.Sessions != tc.sessions || r.Seen != tc.seen {
			t.Errorf("replica %d = %+v, want %+v", i, r, tc)
		}
	}
	if strings.Join(v.Free, ",") != "discord-shard-0" {
		t.Errorf("free leases = %q", v.Free)
	}
}
