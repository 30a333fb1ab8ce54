package daemon

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/redact"
)

// statusFacts are the daemon's lines of /status: channels and their health,
// the model endpoint (never its key), the store and whether it serves,
// sessions and the cluster. The lines read from the store wait at most
// cluster.lease_ttl (at least 5 s): a hung database must not hang /status.
func (d *Daemon) statusFacts(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, max(3*d.storeProbeEvery(), 5*time.Second))
	defer cancel()
	var b strings.Builder
	states := d.ChannelStates()
	names := make([]string, 0, len(states))
	for n := range states {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := states[n]
		health := "connected"
		switch {
		case st.Standby:
			health = "standby (another replica holds its lease)"
		case !st.Ready:
			health = "not connected"
		}
		fmt.Fprintf(&b, "channel %s: %s", n, health)
		if st.Restarts > 0 {
			// An adapter's error can carry a URL with a token in it.
			fmt.Fprintf(&b, " (%d restarts, last error: %s)", st.Restarts, redact.Text(st.LastErr))
		}
		b.WriteString("\n")
	}
	endpoint := config.RedactURL(d.config().LLM.BaseURL) // never the URL's credentials
	if endpoint == "" {
		endpoint = "OpenAI"
	}
	key := "set"
	if !d.config().LLM.APIKey.IsSet() {
		key = "not set"
	}
	fmt.Fprintf(&b, "model: %s at %s (API key %s)\n", d.config().LLM.Model, endpoint, key)
	b.WriteString(d.modelEndpointFacts())
	b.WriteString(d.storageFact())
	if sessions, err := d.store.ListSessions(ctx); err == nil {
		fmt.Fprintf(&b, "sessions: %d\n", len(sessions))
	}
	b.WriteString(d.tasksFact(ctx))
	b.WriteString(d.clusterFacts(ctx))
	return b.String()
}

// StatusText is what /status and `switchboard status` print.
func (d *Daemon) StatusText(ctx context.Context) string { return d.handler.StatusText(ctx) }

// ApprovePairing approves a pairing code on behalf of actor and tells the user.
func (d *Daemon) ApprovePairing(ctx context.Context, actor, code string) (hub.PairingRequest, error) {
	return d.handler.ApprovePairing(ctx, actor, "", code)
}
