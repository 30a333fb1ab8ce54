package outbound

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/retry"
	"github.com/switchboard-bot/switchboard/memory"
)

// Outbox is the part of the store that records deliveries: an intent before
// each platform call, the platform's receipt after.
type Outbox interface {
	OutboxIntent(ctx context.Context, r memory.OutboxRecord) (uint64, error)
	OutboxResult(ctx context.Context, id uint64, status, platformID, errText string) error
	OutboxForTurn(ctx context.Context, turnID string) ([]memory.OutboxRecord, error)
}

// Delivery is one answer to deliver.
type Delivery struct {
	Target   channels.Target
	ReplyTo  string // platform message id to reply to (groups)
	TurnID   string // outbox key; "" = not recorded
	Markdown string
	// Done are the inbox items this delivery finishes: with a
	// memory.Lifecycle store they are cleared in the same transaction as the
	// last chunk's receipt (DeliverDone reports whether that happened).
	Done []uint64
	// Prepared, if set, is the answer's first send intent, committed with the
	// turn (channels/hub, commit.go): chunk 0 is sent without a write of its
	// own.
	Prepared *Prepared
}

// Prepared is the part of a delivery committed with its turn.
type Prepared struct {
	Chunks []channels.Chunk // the formatted, capped answer
	Intent uint64           // the outbox id of chunk 0's intent
	Paced  bool             // chunk 0's send slot was taken before the commit
}

// Stats counts what an Outbound did since start.
type Stats struct {
	Sent, Edited, Retried, Failed, Resent uint64
	// LastFailure describes the latest failed delivery ("" if none yet):
	// when, the target and the platform's error text, for /status.
	LastFailure string
}

// Outbound is the shared delivery path: format and split through the channel,
// record each chunk's intent and receipt in the outbox, retry by error class
// (rate limits wait at least RetryAfter, temporary errors back off, permanent and
// ambiguous errors are not retried) and edit streamed drafts into the final text.
type Outbound struct {
	outbox      Outbox
	receipts    *receiptOutbox   // outbox, keeping receipts a full disk refused
	lc          memory.Lifecycle // the store's delivery steps; nil: one write per record
	log         *slog.Logger
	sleep       func(ctx context.Context, d time.Duration) error
	maxAttempts int
	baseDelay   time.Duration
	maxDelay    time.Duration
	maxWait     time.Duration
	maxChunks   atomic.Int64
	obs         Observer
	after       func(time.Duration) <-chan time.Time

	sent, edited, retried, failed, resent atomic.Uint64
	lastFailure                           atomic.Pointer[string] // Stats.LastFailure
}

// Options configures an Outbound. Zero values take defaults.
type Options struct {
	Logger      *slog.Logger
	Sleep       func(ctx context.Context, d time.Duration) error // default: a timer that honours ctx
	MaxAttempts int                                              // default 6
	BaseDelay   time.Duration                                    // default 1s, doubling, ±20% jitter
	MaxDelay    time.Duration                                    // default 30s
	MaxWait     time.Duration                                    // longest retry_after honoured, default 5m
	// Observer counts deliveries for metrics (optional).
	Observer Observer
	// MaxChunks caps the platform messages of one answer (streamed drafts
	// and the final delivery); a longer answer is cut and ends with
	// TruncatedNote. Default DefaultMaxChunks.
	MaxChunks int
	// After is the streamer's clock for the waits between drafts (tests
	// fire them by hand); default time.After.
	After func(time.Duration) <-chan time.Time
}

// Observer receives delivery events (metrics). Methods must be fast and
// safe for concurrent use.
type Observer interface {
	ChunkSent(channel string)
	Delivery(outcome string) // retried | failed | resent
}

type nopObserver struct{}

func (nopObserver) ChunkSent(string) {}
func (nopObserver) Delivery(string)  {}

// Compile-time checks.
var (
	_ Observer = nopObserver{}
	_ Outbox   = (*receiptOutbox)(nil)
	_ Outbox   = memory.Store(nil) // every store records deliveries
)

// New returns an Outbound recording into outbox (which may be nil: nothing
// is recorded, nothing is checked against earlier sends).
func New(outbox Outbox, o Options) *Outbound {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Sleep == nil {
		o.Sleep = retry.Sleep
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
	if o.After == nil {
		o.After = time.After
	}
	var ro *receiptOutbox
	lc, _ := outbox.(memory.Lifecycle)
	if outbox != nil {
		ro = &receiptOutbox{Outbox: outbox} // receipts a full disk refused (receipts.go)
		outbox = ro
	}
	out := &Outbound{outbox: outbox, receipts: ro, lc: lc, log: o.Logger, sleep: o.Sleep, maxAttempts: o.MaxAttempts,
		baseDelay: o.BaseDelay, maxDelay: o.MaxDelay, maxWait: o.MaxWait, obs: o.Observer, after: o.After}
	out.SetMaxChunks(o.MaxChunks)
	return out
}

// SetMaxChunks changes the cap on one answer's platform messages (config
// reload); n <= 0 means DefaultMaxChunks.
func (o *Outbound) SetMaxChunks(n int) {
	if n <= 0 {
		n = DefaultMaxChunks
	}
	o.maxChunks.Store(int64(n))
}

// MaxChunks is the cap on one answer's platform messages.
func (o *Outbound) MaxChunks() int { return int(o.maxChunks.Load()) }

// Stats returns counters since start.
func (o *Outbound) Stats() Stats {
	st := Stats{Sent: o.sent.Load(), Edited: o.edited.Load(), Retried: o.retried.Load(),
		Failed: o.failed.Load(), Resent: o.resent.Load()}
	if p := o.lastFailure.Load(); p != nil {
		st.LastFailure = *p
	}
	return st
}

// Deliver sends d through ch and returns the platform ids of the chunks, in
// order. The answer is capped at MaxChunks messages (the last one then ends
// with TruncatedNote, see Format). Chunks the outbox shows as already delivered to the
// target with the same text are skipped; delivered drafts (streamed messages,
// also those a run killed mid-answer left) are edited into the final text,
// and drafts beyond the answer's last chunk become SupersededDraft; a chunk
// with an intent but no receipt (a crash mid-send) is checked with a Verifier
// channel, else sent again and counted as a resend.
func (o *Outbound) Deliver(ctx context.Context, ch channels.Channel, d Delivery) ([]string, error) {
	ids, _, err := o.DeliverDone(ctx, ch, d)
	return ids, err
}

// DeliverDone is Deliver reporting whether d.Done, the inbox items the
// delivery finishes, were cleared with the last receipt (a memory.Lifecycle
// store); if not, the caller clears them itself.
func (o *Outbound) DeliverDone(ctx context.Context, ch channels.Channel, d Delivery) ([]string, bool, error) {
	run := &deliveryRun{o: o, d: d, fold: o.lc != nil}
	if d.Prepared != nil {
		ids, err := run.sendPrepared(ctx, ch, d.Prepared)
		if err != nil {
			return ids, false, err
		}
		return ids, run.finish(ctx), nil
	}
	chunks, truncated := o.Format(ch, d.Markdown)
	if len(chunks) == 0 {
		return nil, run.finish(ctx), nil
	}
	if truncated {
		o.log.Warn("answer too long; delivering it truncated", "target", d.Target.String(), "turn", d.TurnID,
			"chars", len(d.Markdown), "max_chunks", o.MaxChunks())
	}
	state, err := o.turnState(ctx, d)
	if err != nil {
		return nil, false, err
	}
	ids, err := run.chunks(ctx, ch, chunks, state)
	if err != nil {
		return ids, false, err
	}
	run.flush(ctx)
	o.supersede(ctx, ch, d, len(chunks), state)
	return ids, run.finish(ctx), nil
}

// chunks delivers each chunk not yet delivered, in order (see Deliver).
func (run *deliveryRun) chunks(ctx context.Context, ch channels.Channel, chunks []channels.Chunk, state map[int]chunkRecords) ([]string, error) {
	o, d := run.o, run.d
	editor, canEdit := ch.(channels.Editor)
	ids := make([]string, 0, len(chunks))
	for i, c := range chunks {
		cr := state[i]
		if cr.hasMsg {
			rec := cr.msg
			if rec.Text == c.Text || !canEdit {
				ids = append(ids, rec.PlatformID)
				continue
			}
			run.flush(ctx)
			if err := o.edit(ctx, editor, d, i, rec.PlatformID, c); err != nil {
				return ids, err
			}
			ids = append(ids, rec.PlatformID)
			continue
		}
		if rec := cr.last; cr.unconfirmed() {
			run.flush(ctx)
			if id, ok := o.verify(ctx, ch, d, i, c, rec); ok {
				if rec.Text != c.Text && canEdit { // a draft's send: make it the answer
					if err := o.edit(ctx, editor, d, i, id, c); err != nil {
						return ids, err
					}
				}
				ids = append(ids, id)
				continue
			}
			o.countResend(d, i, "answer")
		}
		id, err := run.send(ctx, ch, i, c, 0, false)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// countResend counts and logs a chunk sent again because its earlier send
// has no receipt (a crash during the platform call, the window DESIGN.md
// allows): Stats.Resent, Observer.Delivery("resent") (the daemon's
// switchboard_deliveries_total{outcome="resent"} and a WARN naming
// the chat. If the earlier send had reached the platform, the chat shows the
// chunk twice; nothing else may double a message. kind is "answer" or
// "draft" (a streamed draft of an earlier run).
func (o *Outbound) countResend(d Delivery, i int, kind string) {
	o.resent.Add(1)
	o.obs.Delivery("resent")
	o.log.Warn("resending a chunk whose earlier send has no receipt; the chat may show it twice",
		"target", d.Target.String(), "turn", d.TurnID, "chunk", i, "kind", kind)
}

// verify asks a Verifier channel whether a chunk without a receipt reached
// the platform; if so, the receipt is recorded and the chunk is not resent.
// It looks for the text the intent recorded (a streamed draft's text may
// differ from the final chunk c).
func (o *Outbound) verify(ctx context.Context, ch channels.Channel, d Delivery, i int, c channels.Chunk, rec memory.OutboxRecord) (string, bool) {
	v, ok := ch.(channels.Verifier)
	if !ok {
		return "", false
	}
	text, plain := rec.Text, ""
	if text == "" || text == c.Text {
		text, plain = c.Text, c.Plain
	}
	out := channels.Outgoing{Target: d.Target, Text: text, Plain: plain, ReplyTo: d.ReplyTo, Nonce: nonce(d.TurnID, i)}
	id, found, err := v.Delivered(ctx, out, rec.Created)
	if err != nil {
		o.log.Warn("could not check whether an unconfirmed chunk arrived; resending", "target", d.Target.String(), "err", err)
		return "", false
	}
	if !found {
		return "", false
	}
	if o.outbox != nil {
		if err := o.outbox.OutboxResult(ctx, rec.ID, memory.OutboxDelivered, id, ""); err != nil {
			o.log.Error("record found chunk", "err", err, "turn", d.TurnID)
		}
	}
	o.log.Info("a chunk sent before the restart had arrived; not resending it", "target", d.Target.String(), "turn", d.TurnID, "chunk", i)
	return id, true
}

// send sends one chunk of d with retries and outbox records, each written
// at once; the streaming path uses it for drafts.
func (o *Outbound) send(ctx context.Context, ch channels.Channel, d Delivery, i int, c channels.Chunk) (string, error) {
	return (&deliveryRun{o: o, d: d}).send(ctx, ch, i, c, 0, false)
}

func (o *Outbound) edit(ctx context.Context, ed channels.Editor, d Delivery, i int, pid string, c channels.Chunk) error {
	_, attempts, err := o.retry(ctx, func(ctx context.Context) (string, error) {
		return pid, ed.Edit(ctx, d.Target, pid, c.Text)
	})
	if err != nil {
		o.failed.Add(1)
		o.obs.Delivery("failed")
		o.logFailure(ctx, "edit", d, i, attempts, err)
		return fmt.Errorf("edit %s in %s: %w", pid, d.Target, err)
	}
	o.edited.Add(1)
	if o.outbox != nil && d.TurnID != "" {
		rec := memory.OutboxRecord{Target: d.Target.String(), TurnID: d.TurnID, Chunk: i, Text: c.Text, Status: memory.OutboxPending}
		var ierr error
		if o.lc != nil { // the edit's record in one write
			rec.Status, rec.PlatformID = memory.OutboxDelivered, pid
			_, ierr = o.receipts.recordDelivery(ctx, o.lc, memory.DeliveryRecord{Intents: []memory.OutboxRecord{rec}})
		} else {
			var id uint64
			if id, ierr = o.outbox.OutboxIntent(ctx, rec); ierr == nil {
				ierr = o.outbox.OutboxResult(ctx, id, memory.OutboxDelivered, pid, "")
			}
		}
		if ierr != nil {
			o.log.Error("record edit", "err", ierr, "turn", d.TurnID)
		}
	}
	return nil
}

// retry runs op until it succeeds, fails permanently or attempts run out;
// it returns the number of attempts made.
func (o *Outbound) retry(ctx context.Context, op func(context.Context) (string, error)) (string, int, error) {
	var id string
	attempts := 0
	p := retry.Policy{Initial: o.baseDelay, Max: o.maxDelay, Jitter: retry.DefaultJitter,
		MaxTries: o.maxAttempts, MaxWait: o.maxWait, Sleep: o.sleep,
		OnRetry: func(attempt int, wait time.Duration, err error) {
			kind, _ := channels.ClassifyError(err)
			o.retried.Add(1)
			o.obs.Delivery("retried")
			o.log.Debug("retrying delivery", "kind", kind.String(), "wait", wait, "attempt", attempt, "err", err)
		}}
	err := retry.Do(ctx, p, func(ctx context.Context) error {
		attempts++
		var err error
		if id, err = op(ctx); err == nil {
			return nil
		}
		switch kind, after := channels.ClassifyError(err); kind {
		case channels.KindPermanent, channels.KindAmbiguous:
			return retry.Permanent(err)
		case channels.KindRateLimited:
			return retry.After(after, err)
		}
		return err
	})
	if err != nil {
		return "", attempts, err
	}
	return id, attempts, nil
}

// logFailure reports a send or edit that failed after its retries: at WARN
// with the target and the platform's error text (the retries themselves log
// at DEBUG), and as OutboundStats.LastFailure for /status. A delivery cut
// short by shutdown is replayed at the next start and logs at INFO.
func (o *Outbound) logFailure(ctx context.Context, op string, d Delivery, chunk, attempts int, err error) {
	kind, _ := channels.ClassifyError(err)
	if ctx.Err() != nil {
		o.log.Info("delivery interrupted by shutdown; it is retried at the next start",
			"op", op, "target", d.Target.String(), "turn", d.TurnID, "chunk", chunk)
		return
	}
	o.log.Warn("delivery failed", "op", op, "target", d.Target.String(), "turn", d.TurnID, "chunk", chunk,
		"attempts", attempts, "kind", kind.String(), "err", err)
	desc := fmt.Sprintf("%s %s to %s failed (%s, %d attempt(s)): %s",
		time.Now().UTC().Format(time.RFC3339), op, d.Target, kind, attempts, oneLineErr(err))
	o.lastFailure.Store(&desc)
}

// oneLineErr keeps an error's text to one line of at most 300 characters.
func oneLineErr(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

func nonce(turnID string, i int) string {
	if turnID == "" {
		return ""
	}
	return turnID + "/" + strconv.Itoa(i)
}
