package outbound

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// deliveryRun is one Deliver call's writes (issue 19). With a
// memory.Lifecycle store (fold) a chunk's receipt is not written on its own:
// it goes with the next chunk's send intent, and the last one with the inbox
// items the delivery finishes — one transaction per platform call, and an
// intent still precedes every call. Anything else the delivery does on the
// platform (an edit, a Verifier lookup, superseding drafts) writes the
// pending receipts first, so no receipt waits across another platform call.
type deliveryRun struct {
	o       *Outbound
	d       Delivery
	fold    bool
	pending []memory.Receipt
}

// sendPrepared sends the chunks of an answer whose first intent was committed
// with the turn.
func (run *deliveryRun) sendPrepared(ctx context.Context, ch channels.Channel, p *Prepared) ([]string, error) {
	ids := make([]string, 0, len(p.Chunks))
	for i, c := range p.Chunks {
		var intent uint64
		paced := false
		if i == 0 {
			intent, paced = p.Intent, p.Paced
		}
		id, err := run.send(ctx, ch, i, c, intent, paced)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// send sends chunk i: the pacer's slot (unless paced), its intent (unless
// intent, already recorded, is given), the platform call with retries, and
// its receipt (kept for the next write when folding).
func (run *deliveryRun) send(ctx context.Context, ch channels.Channel, i int, c channels.Chunk, intent uint64, paced bool) (string, error) {
	o, d := run.o, run.d
	if p, ok := ch.(channels.Pacer); ok && !paced {
		if err := p.WaitSendSlot(ctx, d.Target); err != nil {
			return "", fmt.Errorf("send to %s: %w", d.Target, err)
		}
		paced = true
	}
	recID := intent
	if recID == 0 && o.outbox != nil && d.TurnID != "" {
		id, err := run.recordIntent(ctx, memory.OutboxRecord{Target: d.Target.String(), TurnID: d.TurnID,
			Chunk: i, Text: c.Text, Status: memory.OutboxPending})
		if err != nil {
			return "", fmt.Errorf("record send intent: %w", err)
		}
		recID = id
	}
	out := channels.Outgoing{Target: d.Target, Text: c.Text, Plain: c.Plain, ReplyTo: d.ReplyTo, Nonce: nonce(d.TurnID, i), Paced: paced}
	pid, attempts, err := o.retry(ctx, func(ctx context.Context) (string, error) {
		s, err := ch.Send(ctx, out)
		out.Paced = false // a retry waits for a fresh slot
		return s, err
	})
	if recID != 0 && o.outbox != nil {
		r := memory.Receipt{ID: recID, Status: memory.OutboxDelivered, PlatformID: pid}
		if err != nil {
			r.Status, r.Error = memory.OutboxFailed, err.Error()
		}
		run.pending = append(run.pending, r)
		if !run.fold || err != nil {
			run.flush(ctx) // recorded even when ctx was canceled mid-way
		}
	}
	if err != nil {
		o.failed.Add(1)
		o.obs.Delivery("failed")
		o.logFailure(ctx, "send", d, i, attempts, err)
		return "", fmt.Errorf("send to %s: %w", d.Target, err)
	}
	o.sent.Add(1)
	o.obs.ChunkSent(d.Target.Channel)
	return pid, nil
}

// recordIntent writes an intent, with the receipts still pending when folding.
func (run *deliveryRun) recordIntent(ctx context.Context, rec memory.OutboxRecord) (uint64, error) {
	o := run.o
	if !run.fold {
		return o.outbox.OutboxIntent(ctx, rec)
	}
	ids, err := o.receipts.recordDelivery(ctx, o.lc, memory.DeliveryRecord{Receipts: run.pending,
		Intents: []memory.OutboxRecord{rec}})
	run.pending = nil // written, or kept by receiptOutbox for the retry
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// flush writes the receipts not yet written. A failure is logged; a receipt a
// full disk refused stays known to this process (receipts.go).
func (run *deliveryRun) flush(ctx context.Context) {
	if len(run.pending) == 0 {
		return
	}
	o, d := run.o, run.d
	ctx = context.WithoutCancel(ctx)
	var err error
	if run.fold {
		_, err = o.receipts.recordDelivery(ctx, o.lc, memory.DeliveryRecord{Receipts: run.pending})
	} else {
		for _, r := range run.pending {
			if rerr := o.outbox.OutboxResult(ctx, r.ID, r.Status, r.PlatformID, r.Error); rerr != nil {
				err = rerr
			}
		}
	}
	run.pending = nil
	if err != nil {
		o.log.Error("record send result", "err", err, "turn", d.TurnID)
	}
}

// finish writes the pending receipts with the delivery's finished inbox
// items; it reports whether the items were cleared (else the caller clears
// them, retrying while the store cannot write).
func (run *deliveryRun) finish(ctx context.Context) bool {
	o, d := run.o, run.d
	if !run.fold || len(d.Done) == 0 {
		run.flush(ctx)
		return false
	}
	_, err := o.receipts.recordDelivery(context.WithoutCancel(ctx), o.lc, memory.DeliveryRecord{
		Receipts: run.pending, Done: d.Done})
	run.pending = nil
	if err != nil {
		o.log.Error("record delivery", "err", err, "turn", d.TurnID)
		return false
	}
	return true
}
