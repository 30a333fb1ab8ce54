package outbound

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/channels"
)

// Router delivers text to a target address through an Outbound, finding the
// channel by the target's channel name. It is the path of deliveries that
// answer no chat message — heartbeat greetings, job results, the
// send_message tool, admin alerts — and satisfies heartbeat.Deliverer: the
// same formatting, cap, retries, outbox records and counters as a chat
// answer, without the hub's queue.
type Router struct {
	Out *Outbound
	// Channels looks up a running channel by name (the daemon passes the
	// hub's registry, which follows config reloads).
	Channels func(name string) (channels.Channel, bool)
}

// Deliver sends text (Markdown) to target and returns the platform ids of the
// chunks. turnID keys the outbox records ("" = not recorded); a delivery with
// the same turnID to the same target again sends only what did not arrive.
// A target on a channel that is not running is an error; nothing is sent.
func (r Router) Deliver(ctx context.Context, target channels.Target, turnID, text string) ([]string, error) {
	ch, ok := r.Channels(target.Channel)
	if !ok {
		return nil, fmt.Errorf("deliver to %s: channel %q is not running", target, target.Channel)
	}
	return r.Out.Deliver(ctx, ch, Delivery{Target: target, TurnID: turnID, Markdown: text})
}
