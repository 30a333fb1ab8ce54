package channels

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// Outbox is the part of the store that records deliveries: an intent before
// each platform call, the platform's receipt after.
type Outbox interface {
	OutboxIntent(ctx context.Context, r memory.OutboxRecord) (uint64, error)
	OutboxResult(ctx context.Context, id uint64, status, platformID, errText string) error
	OutboxForTurn(ctx context.Context, turnID string) ([]memory.OutboxRecord, error)
}

// Outbox record statuses.
const (
	OutboxPending   = "pending"
	OutboxDelivered = "delivered"
	OutboxFailed    = "failed"
)

// Delivery is one answer to deliver.
type Delivery struct {
	Target   Target
	ReplyTo  string // platform message id to reply to (groups)
	TurnID   string // outbox key; "" = not recorded
	Markdown string
}

// OutboundStats counts what the outbound path did.
type OutboundStats struct {
	Sent, Edited, Retried, Failed, Resent uint64
}

// Outbound is the shared delivery path: format and split through the channel,
// record each chunk's intent and receipt in the outbox, retry by error class
// (rate limits wait RetryAfter, temporary errors back off, permanent and
// ambiguous errors are not retried) and edit streamed drafts into the final text.
type Outbound struct {
	outbox      Outbox
	log         *slog.Logger
	sleep       func(ctx context.Context, d time.Duration) error
	maxAttempts int
	baseDelay   time.Duration
	maxDelay    time.Duration
	maxWait     time.Duration
	obs         DeliveryObserver

	sent, edited, retried, failed, resent atomic.Uint64
}

// OutboundOptions configures an Outbound. Zero values take defaults.
type OutboundOptions struct {
	Logger      *slog.Logger
	Sleep       func(ctx context.Context, d time.Duration) error // default: a timer that honours ctx
	MaxAttempts int                                              // default 6
	BaseDelay   time.Duration                                    // default 1s, doubling
	MaxDelay    time.Duration                                    // default 30s
	MaxWait     time.Duration                                    // longest retry_after honoured, default 5m
	// Observer counts deliveries for metrics (optional).
	Observer DeliveryObserver
}

// DeliveryObserver receives delivery events (metrics).
type DeliveryObserver interface {
	ChunkSent(channel string)
	Delivery(outcome string) // retried | failed | resent
}

// NewOutbound returns an Outbound recording into outbox (which may be nil).
func NewOutbound(outbox Outbox, o OutboundOptions) *Outbound {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Sleep == nil {
		o.Sleep = SleepContext
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 6
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = time.Second
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 30 * time.Second
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 5 * time.Minute
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	return &Outbound{outbox: outbox, log: o.Logger, sleep: o.Sleep, maxAttempts: o.MaxAttempts,
		baseDelay: o.BaseDelay, maxDelay: o.MaxDelay, maxWait: o.MaxWait, obs: o.Observer}
}

// SleepContext waits d or until ctx is done.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Stats returns counters since start.
func (o *Outbound) Stats() OutboundStats {
	return OutboundStats{Sent: o.sent.Load(), Edited: o.edited.Load(), Retried: o.retried.Load(),
		Failed: o.failed.Load(), Resent: o.resent.Load()}
}

// Deliver sends d through ch and returns the platform ids of the chunks, in
// order. Chunks the outbox shows as already delivered with the same text are
// skipped; delivered drafts (streamed messages) are edited into the final
// text; a chunk with an intent but no receipt (a crash mid-send) is sent again
// and counted as a resend.
func (o *Outbound) Deliver(ctx context.Context, ch Channel, d Delivery) ([]string, error) {
	chunks := ch.Format(d.Markdown)
	if len(chunks) == 0 {
		return nil, nil
	}
	existing, err := o.latest(ctx, d.TurnID)
	if err != nil {
		return nil, err
	}
	editor, canEdit := ch.(Editor)
	ids := make([]string, 0, len(chunks))
	for i, c := range chunks {
		rec, has := existing[i]
		if has && rec.Status == OutboxDelivered && rec.PlatformID != "" {
			if rec.Text == c.Text || !canEdit {
				ids = append(ids, rec.PlatformID)
				continue
			}
			if err := o.edit(ctx, editor, d, i, rec.PlatformID, c); err != nil {
				return ids, err
			}
			ids = append(ids, rec.PlatformID)
			continue
		}
		if has && rec.Status == OutboxPending {
			if id, ok := o.verify(ctx, ch, d, i, c, rec); ok {
				ids = append(ids, id)
				continue
			}
			o.resent.Add(1)
			o.obs.Delivery("resent")
			o.log.Warn("resending a chunk whose earlier send has no receipt",
				"target", d.Target.String(), "turn", d.TurnID, "chunk", i)
		}
		id, err := o.send(ctx, ch, d, i, c)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// verify asks a Verifier channel whether a chunk without a receipt reached
// the platform; if so, the receipt is recorded and the chunk is not resent.
func (o *Outbound) verify(ctx context.Context, ch Channel, d Delivery, i int, c Chunk, rec memory.OutboxRecord) (string, bool) {
	v, ok := ch.(Verifier)
	if !ok {
		return "", false
	}
	out := Outgoing{Target: d.Target, Text: c.Text, Plain: c.Plain, ReplyTo: d.ReplyTo, Nonce: nonce(d.TurnID, i)}
	id, found, err := v.Delivered(ctx, out, rec.Created)
	if err != nil {
		o.log.Warn("could not check whether an unconfirmed chunk arrived; resending", "target", d.Target.String(), "err", err)
		return "", false
	}
	if !found {
		return "", false
	}
	if o.outbox != nil {
		if err := o.outbox.OutboxResult(ctx, rec.ID, OutboxDelivered, id, ""); err != nil {
			o.log.Error("record found chunk", "err", err, "turn", d.TurnID)
		}
	}
	o.log.Info("a chunk sent before the restart had arrived; not resending it", "target", d.Target.String(), "turn", d.TurnID, "chunk", i)
	return id, true
}

// SendChunk sends one chunk of d with retries and outbox records; the streaming
// path uses it for drafts.
func (o *Outbound) send(ctx context.Context, ch Channel, d Delivery, i int, c Chunk) (string, error) {
	paced := false
	if p, ok := ch.(Pacer); ok {
		if err := p.WaitSendSlot(ctx, d.Target); err != nil {
			return "", fmt.Errorf("send to %s: %w", d.Target, err)
		}
		paced = true
	}
	var recID uint64
	if o.outbox != nil && d.TurnID != "" {
		id, err := o.outbox.OutboxIntent(ctx, memory.OutboxRecord{Target: d.Target.String(), TurnID: d.TurnID,
			Chunk: i, Text: c.Text, Status: OutboxPending})
		if err != nil {
			return "", fmt.Errorf("record send intent: %w", err)
		}
		recID = id
	}
	out := Outgoing{Target: d.Target, Text: c.Text, Plain: c.Plain, ReplyTo: d.ReplyTo, Nonce: nonce(d.TurnID, i), Paced: paced}
	pid, err := o.retry(ctx, func(ctx context.Context) (string, error) {
		s, err := ch.Send(ctx, out)
		out.Paced = false // a retry waits for a fresh slot
		return s, err
	})
	if recID != 0 {
		status, errText := OutboxDelivered, ""
		if err != nil {
			status, errText = OutboxFailed, err.Error()
		}
		// Record the receipt even when ctx was canceled mid-way.
		if rerr := o.outbox.OutboxResult(context.WithoutCancel(ctx), recID, status, pid, errText); rerr != nil {
			o.log.Error("record send result", "err", rerr, "turn", d.TurnID)
		}
	}
	if err != nil {
		o.failed.Add(1)
		o.obs.Delivery("failed")
		return "", fmt.Errorf("send to %s: %w", d.Target, err)
	}
	o.sent.Add(1)
	o.obs.ChunkSent(d.Target.Channel)
	return pid, nil
}

func (o *Outbound) edit(ctx context.Context, ed Editor, d Delivery, i int, pid string, c Chunk) error {
	_, err := o.retry(ctx, func(ctx context.Context) (string, error) {
		return pid, ed.Edit(ctx, d.Target, pid, c.Text)
	})
	if err != nil {
		o.failed.Add(1)
		return fmt.Errorf("edit %s in %s: %w", pid, d.Target, err)
	}
	o.edited.Add(1)
	if o.outbox != nil && d.TurnID != "" {
		id, ierr := o.outbox.OutboxIntent(ctx, memory.OutboxRecord{Target: d.Target.String(), TurnID: d.TurnID,
			Chunk: i, Text: c.Text, Status: OutboxPending})
		if ierr == nil {
			ierr = o.outbox.OutboxResult(ctx, id, OutboxDelivered, pid, "")
		}
		if ierr != nil {
			o.log.Error("record edit", "err", ierr, "turn", d.TurnID)
		}
	}
	return nil
}

// retry runs op until it succeeds, fails permanently or attempts run out.
func (o *Outbound) retry(ctx context.Context, op func(context.Context) (string, error)) (string, error) {
	delay := o.baseDelay
	for attempt := 1; ; attempt++ {
		id, err := op(ctx)
		if err == nil {
			return id, nil
		}
		kind, after := ClassifyError(err)
		if kind == KindPermanent || kind == KindAmbiguous || attempt >= o.maxAttempts || ctx.Err() != nil {
			return "", err
		}
		wait := delay
		if kind == KindRateLimited {
			wait = min(max(after, 10*time.Millisecond), o.maxWait)
		} else {
			delay = min(delay*2, o.maxDelay)
		}
		o.retried.Add(1)
		o.obs.Delivery("retried")
		o.log.Debug("retrying delivery", "kind", kind.String(), "wait", wait, "attempt", attempt, "err", err)
		if err := o.sleep(ctx, wait); err != nil {
			return "", err
		}
	}
}

// latest maps chunk index → newest outbox record of the turn.
func (o *Outbound) latest(ctx context.Context, turnID string) (map[int]memory.OutboxRecord, error) {
	out := map[int]memory.OutboxRecord{}
	if o.outbox == nil || turnID == "" {
		return out, nil
	}
	recs, err := o.outbox.OutboxForTurn(ctx, turnID)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	for _, r := range recs {
		if cur, ok := out[r.Chunk]; !ok || r.ID > cur.ID {
			out[r.Chunk] = r
		}
	}
	return out, nil
}

func nonce(turnID string, i int) string {
	if turnID == "" {
		return ""
	}
	return turnID + "/" + strconv.Itoa(i)
}
