package heartbeat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// Jobs deliver through channels/outbound directly (the daemon hands them an
// outbound.Router, not the hub): the reminder reaches the chat once, the
// send is in the outbox under the run's turn id, delivering the same run
// again sends nothing twice, and a target on a channel that is not running
// is a failed delivery that names it.
func TestJobDeliversThroughOutbound(t *testing.T) {
	sh := mustLoc(t, "Asia/Shanghai")
	at := time.Date(2025, 3, 1, 9, 0, 0, 0, sh)
	r := newRig(t, at.Add(-time.Hour))
	tg := console.NewMemory("telegram", 4000, 0)
	router := outbound.Router{
		Out: outbound.New(r.store, outbound.Options{}),
		Channels: func(name string) (channels.Channel, bool) {
			if name == "telegram" {
				return tg, true
			}
			return nil, false
		},
	}
	job := dailyReminder(MisfireSkip)
	job.DeliverTo = []string{"telegram:1", "slack:C9"}
	j, err := NewJobs(Options{Store: r.store, Jobs: []JobSpec{job}, Location: time.UTC, Out: router, Now: r.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, now := range []time.Time{at.Add(-time.Hour), at} { // the job is seen, then due
		r.clk.Set(now)
		if err := j.Tick(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	sent := tg.Sent("telegram:1")
	if len(sent) != 1 || sent[0].Text != "Stand-up in 15 minutes" {
		t.Fatalf("chat shows %+v; want the reminder once", sent)
	}
	runs, err := r.store.ListRuns(ctx, "daily", 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v, %v; want one", runs, err)
	}
	byTarget := map[string]memory.DeliveryStatus{}
	for _, d := range runs[0].Deliveries {
		byTarget[d.Target] = d
	}
	if d := byTarget["telegram:1"]; d.Status != DeliveryDelivered || d.PlatformID != sent[0].ID {
		t.Errorf("telegram delivery recorded as %+v; want delivered as %s", d, sent[0].ID)
	}
	if d := byTarget["slack:C9"]; d.Status != DeliveryFailed || !strings.Contains(d.Error, `channel "slack" is not running`) {
		t.Errorf("slack delivery recorded as %+v; want failed, naming the channel", d)
	}

	turnID := fmt.Sprintf("job-daily-%d-telegram:1", at.Unix())
	recs, err := r.store.OutboxForTurn(ctx, turnID)
	if err != nil || len(recs) != 1 || recs[0].Status != memory.OutboxDelivered || recs[0].PlatformID != sent[0].ID {
		t.Fatalf("outbox for %s = %+v, %v; want the delivered send", turnID, recs, err)
	}
	if _, err := router.Deliver(ctx, channels.Target{Channel: "telegram", ChatID: "1"}, turnID, "Stand-up in 15 minutes"); err != nil {
		t.Fatal(err)
	}
	if got := tg.Sent("telegram:1"); len(got) != 1 {
		t.Fatalf("delivering the same run again sent it twice: %+v", got)
	}
}
