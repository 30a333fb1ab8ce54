package outbound_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// The Router is how deliveries that answer no chat message (heartbeat
// greetings, job results, send_message, admin alerts) reach a chat: the
// channel is found by the target's channel name, the text goes through the
// same Outbound (capped, recorded under the turn id, counted), and a target
// on a channel that is not running is a clear error, nothing sent.
func TestRouterDeliversByChannelName(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	tg := console.NewMemory("telegram", 4000, 0)
	running := map[string]channels.Channel{"telegram": tg}
	r := outbound.Router{
		Out: outbound.New(st, outbound.Options{}),
		Channels: func(name string) (channels.Channel, bool) {
			ch, ok := running[name]
			return ch, ok
		},
	}
	target := channels.Target{Channel: "telegram", ChatID: "42"}
	ids, err := r.Deliver(ctx, target, "job-report-1", "Your daily report.")
	if err != nil || len(ids) != 1 {
		t.Fatalf("Deliver = %v, %v; want one message id", ids, err)
	}
	if got := tg.Sent("telegram:42"); len(got) != 1 || got[0].Text != "Your daily report." {
		t.Fatalf("chat shows %+v; want the report once", got)
	}
	recs, err := st.OutboxForTurn(ctx, "job-report-1")
	if err != nil || len(recs) != 1 || recs[0].Status != memory.OutboxDelivered || recs[0].PlatformID != ids[0] {
		t.Fatalf("outbox = %+v, %v; want the delivery recorded under the job's turn id", recs, err)
	}
	if r.Out.Stats().Sent != 1 {
		t.Errorf("Stats().Sent = %d, want 1", r.Out.Stats().Sent)
	}

	_, err = r.Deliver(ctx, channels.Target{Channel: "slack", ChatID: "C1"}, "", "hello")
	if err == nil || !strings.Contains(err.Error(), `channel "slack" is not running`) || !strings.Contains(err.Error(), "slack:C1") {
		t.Fatalf("Deliver to a channel that is not running: err %v; want it named with the target", err)
	}
}
