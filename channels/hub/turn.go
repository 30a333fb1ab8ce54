package hub

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// runTurn runs the agent for a batch of chat messages of one session.
func (h *Handler) runTurn(s *session, batch []item) {
	last := batch[len(batch)-1].msg
	target := last.Target()
	turnID := "in-" + strconv.FormatUint(batch[0].id, 10)
	ch, ok := h.Channel(last.Channel)
	if !ok {
		h.log.Error("no channel to answer on", "channel", last.Channel)
		h.done(batch)
		return
	}
	h.mu.Lock()
	parent := h.baseCtx
	if s.held != nil {
		parent = s.held // claims mode: losing the claim cancels the turn
	}
	h.mu.Unlock()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	h.mu.Lock()
	s.cancel, s.stopped = cancel, false
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		s.cancel = nil
		h.mu.Unlock()
	}()

	tc := &turnCommit{h: h, ch: ch, batch: batch, turnID: turnID, wait: ctx}
	tc.lc, _ = h.store.(memory.Lifecycle)
	res, outcome, err := h.runCommitted(ctx, ch, batch, turnID, tc)
	switch outcome {
	case turnCanceled:
		h.finishCanceled(s, batch, last, turnID)
		return
	case turnAbandoned:
		h.log.Info("shutting down while the store cannot write; the message stays in the inbox for the next start", "turn", turnID)
		return
	}
	if err != nil {
		if ctx.Err() != nil {
			h.finishCanceled(s, batch, last, turnID)
			return
		}
		h.turnErrors.Add(1)
		if errors.Is(err, agent.ErrModelNotConfigured) {
			// Not a failure of this turn: the start-up log warned once
			// already (`switchboard run`), and the chat gets the guidance.
			h.log.Debug("answered with the setup guidance: no model is configured", "turn", turnID, "session", target.String())
		} else {
			h.log.Error("turn failed", "turn", turnID, "session", target.String(), "err", err)
		}
		h.deliverAndFinish(last, turnID, h.caps.withTruncationNote(batch, agent.FriendlyError(err)), batch)
		return
	}
	files := tc.outFiles()
	h.recordVoice(tc, res, target) // voice.go
	switch {
	case tc.skipped:
		return // the commit finished the items (AlreadySent)
	case tc.prepared != nil:
		h.deliverThen(last, outbound.Delivery{Target: target, ReplyTo: replyTo(last), TurnID: turnID, Markdown: tc.answer,
			Done: ids(batch), Prepared: tc.prepared}, batch, files)
		return
	}
	answer := res.Text
	if strings.TrimSpace(answer) == "" {
		answer = noAnswer
	}
	if h.admin != nil && len(files) == 0 && h.admin.AlreadySent(turnID, target.String(), answer) {
		h.done(batch) // send_message already delivered this very text here
		return
	}
	h.deliverThen(last, outbound.Delivery{Target: target, ReplyTo: replyTo(last), TurnID: turnID,
		Markdown: h.caps.withTruncationNote(batch, answer), Done: ids(batch)}, batch, files)
}

// turnOutcome says how runCommitted ended.
type turnOutcome int

const (
	turnRan       turnOutcome = iota // the turn ran; its result and error are returned
	turnCanceled                     // canceled (/stop, the operator, shutdown) before it could run or commit
	turnAbandoned                    // shutting down while the store cannot write: the items stay pending
)

// runCommitted runs the turn under the concurrency cap until its result is
// committed. A turn whose commit failed on storage (disk full) has nothing
// on record and its inbox items stay pending: its result is committed once
// the store writes again (or, if that cannot be done, it runs again); /stop
// and Close end the wait.
func (h *Handler) runCommitted(ctx context.Context, ch channels.Channel, batch []item, turnID string, tc *turnCommit) (agent.Result, turnOutcome, error) {
	last := batch[len(batch)-1].msg
	target := last.Target()
	backoff := h.storagePolicy().Backoff()
	for {
		select {
		case h.sem <- struct{}{}:
		case <-ctx.Done():
			return agent.Result{}, turnCanceled, nil
		}
		growStack() // before the turn's deep calls (growstack.go)
		started := time.Now()
		var released atomic.Bool
		tc.release = func() {
			if released.CompareAndSwap(false, true) {
				<-h.sem
			}
		}
		res, err := h.turn(ctx, ch, target, turnID, batch, tc)
		tc.release()
		h.turns.Add(1)
		h.obs.TurnDone(last.Channel, res, err, time.Since(started))
		if !tc.used {
			h.auditTools(last, res) // else the commit carried them
		}
		if ctx.Err() != nil || !memory.IsStorageError(err) {
			if err == nil {
				h.storageOK(opCommit) // the turn was committed
			}
			return res, turnRan, err
		}
		h.storageFailed(opCommit, err)
		if h.recommit(ctx, target.String(), turnID, batch, res, tc) {
			if res.FinishReason != agent.FinishAPIError {
				err = nil
			}
			return res, turnRan, err
		}
		if !h.awaitStorage(ctx, backoff) {
			if ctx.Err() != nil {
				return res, turnCanceled, err
			}
			return res, turnAbandoned, err
		}
	}
}

// turn runs the agent with typing and streaming around it; both always stop
// when the turn ends.
func (h *Handler) turn(ctx context.Context, ch channels.Channel, target channels.Target, turnID string, batch []item, tc *turnCommit) (agent.Result, error) {
	last := batch[len(batch)-1].msg
	if t, ok := ch.(channels.Typer); ok {
		stop := t.StartTyping(ctx, target)
		defer stop()
	}
	dw, _ := ch.(channels.DeltaWriter)
	st, ok := h.out.Stream(ctx, ch, outbound.Delivery{Target: target, ReplyTo: replyTo(last), TurnID: turnID})
	if ok {
		defer st.Stop()
	}
	req := agent.Request{
		SessionKey: target.String(),
		Text:       h.caps.turnText(batch),
		Media:      batchMedia(batch),
		Runtime:    h.runtime(last),
		Sources:    ids(batch),
		Received:   firstReceived(batch),
		TurnID:     turnID,
		Admin:      h.allAdmins(batch), // llm.budget exempts admins unless configured
		OnEvent: func(ev agent.Event) {
			tc.voice.onEvent(ev) // voice.go
			switch {
			case ev.Kind == agent.EventTextDelta && st != nil:
				st.Append(ev.Text)
			case ev.Kind == agent.EventReset && st != nil:
				st.Reset()
			case ev.Kind == agent.EventTextDelta && dw != nil:
				dw.WriteDelta(target, ev.Text)
			case ev.Kind == agent.EventReset && dw != nil:
				dw.ResetDelta(target)
			}
		},
	}
	if r, ok := h.personas.(ownSessionResolver); ok {
		// Resolved by the agent with the session's metadata it reads anyway.
		req.ResolvePersona = func(ctx context.Context, own *memory.SessionMeta) string {
			return r.ResolveOwn(ctx, target, own)
		}
	} else if h.personas != nil {
		req.Persona = h.personas.Resolve(ctx, target)
	}
	tc.reset(st)
	tc.files = newFileQueue(ch) // this run's send_file queue (sendfile.go)
	tc.voice = &voiceMark{}     // this run's voice-reply mark (voice.go)
	ctx = tools.WithFileQueue(ctx, tc.files)
	if tc.lc != nil {
		req.Commit = tc.hook
	}
	ctx = agent.WithAsker(ctx, h.asker(target, batch[0].msg)) // approval in chat (approval.go)
	res, err := h.agent.ProcessMessage(ctx, req)
	if st != nil {
		st.Stop() // no draft edit may land after the final delivery starts
	}
	return res, err
}

func (h *Handler) finishCanceled(s *session, batch []item, last channels.Message, turnID string) {
	h.mu.Lock()
	stopped := s.stopped
	h.mu.Unlock()
	if stopped {
		// /stop: the user does not want these answered; the /stop command
		// itself replies.
		h.done(batch)
		return
	}
	if h.operatorCancel.Load() {
		h.finishOperatorCanceled(batch, last, turnID)
		return
	}
	// Shutdown: leave the inbox items pending so the next start replays them.
	h.log.Info("turn interrupted by shutdown; it will run again at start", "turn", turnID)
}

// deliverAndFinish delivers text as the answer to the batch and clears the
// inbox items. A delivery that fails for good on the platform is logged and
// the items are still cleared, so one unreachable chat cannot make every
// start replay it. A delivery that fails because the store cannot write (the
// outbox) is retried with backoff; the items stay pending until it succeeds
// (or, at shutdown, for the next start).
func (h *Handler) deliverAndFinish(last channels.Message, turnID, text string, batch []item) {
	h.deliverD(last, outbound.Delivery{Target: last.Target(), ReplyTo: replyTo(last), TurnID: turnID, Markdown: text, Done: ids(batch)}, batch)
}

// deliverD is deliverAndFinish for a prepared Delivery; d.Done are the
// batch's items, cleared with the last receipt when the store can (else here).
func (h *Handler) deliverD(last channels.Message, d outbound.Delivery, batch []item) {
	h.deliverThen(last, d, batch, nil)
}

// deliverThen is deliverD followed by the turn's files (sendfile.go): with
// files, the items are cleared only after the last file's receipt.
func (h *Handler) deliverThen(last channels.Message, d outbound.Delivery, batch []item, files []outbound.OutFile) {
	voice, hasVoice := h.pendingVoice(last, d) // voice.go
	if len(files) > 0 || hasVoice {
		d.Done = nil
	}
	ctx := h.baseCtx
	if h.closing() {
		ctx = context.Background()
	}
	done := false
	if ch, ok := h.Channel(last.Channel); ok {
		deliver := func(ctx context.Context) error {
			var err error
			_, done, err = h.out.DeliverDone(ctx, ch, d)
			d.Prepared = nil // a retry works from the outbox
			return err
		}
		err := h.storageRetry(ctx, opDeliver, deliver)
		if moved, ok := movedTo(err); ok {
			h.moveSession(last.Target(), moved)
			d = outbound.Delivery{Target: moved, TurnID: d.TurnID, Markdown: d.Markdown, Done: d.Done}
			err = h.storageRetry(ctx, opDeliver, deliver)
		}
		if err != nil {
			if memory.IsStorageError(err) {
				h.log.Info("shutting down while the store cannot write; the answer is delivered at the next start", "turn", d.TurnID)
				return
			}
			h.log.Error("delivery failed", "turn", d.TurnID, "target", last.Target().String(), "err", err)
			if ctx.Err() != nil {
				return // shutting down mid-delivery: replay finishes it
			}
		}
		if !h.deliverFiles(ctx, ch, d.Target, d.ReplyTo, d.TurnID, files) {
			return // shutting down mid-delivery: replay finishes it
		}
		if hasVoice && !h.deliverVoice(ctx, ch, d, voice) {
			return // shutting down mid-delivery: replay finishes it
		}
	}
	if !done {
		h.done(batch)
	}
}

// movedTo reports the new address of a chat that moved (a Telegram group
// upgraded to a supergroup), from an adapter error with a MovedTo method.
func movedTo(err error) (channels.Target, bool) {
	if err == nil {
		return channels.Target{}, false // no error: nothing escapes to the heap
	}
	var mv interface{ MovedTo() channels.Target }
	if !errors.As(err, &mv) {
		return channels.Target{}, false
	}
	return mv.MovedTo(), true
}

// SessionMover is implemented by stores that can rename a session.
type SessionMover interface {
	MoveSession(ctx context.Context, from, to string) error
}

// moveSession carries a chat's session (history, notes, archives) to its new address.
func (h *Handler) moveSession(from, to channels.Target) {
	h.log.Info("chat moved; its session follows", "from", from.String(), "to", to.String())
	mv, ok := h.store.(SessionMover)
	if !ok {
		return
	}
	if err := mv.MoveSession(context.WithoutCancel(h.baseCtx), from.String(), to.String()); err != nil {
		h.log.Error("move session", "from", from.String(), "to", to.String(), "err", err)
		return
	}
	h.audit("system", "session.move", to.String(), "moved from "+from.String(), "")
}

// reply answers a command or pairing message.
func (h *Handler) reply(it item, text string) {
	h.deliverAndFinish(it.msg, "in-"+strconv.FormatUint(it.id, 10), text, []item{it})
}

// done clears the batch's inbox items, retrying while the store cannot write.
func (h *Handler) done(batch []item) {
	err := h.storageRetry(context.WithoutCancel(h.baseCtx), opClear, func(ctx context.Context) error {
		return h.store.InboxDone(ctx, ids(batch)...)
	})
	if err != nil {
		h.log.Error("clear inbox", "err", err)
	}
}

func (h *Handler) runtime(m channels.Message) agent.Runtime {
	ct := "group"
	switch {
	case m.Direct:
		ct = "direct"
	case m.ThreadID != "":
		ct = "thread"
	}
	return agent.Runtime{Channel: m.Channel, ChatType: ct, SenderName: m.Sender.Name, Formatting: h.format[m.Channel]}
}

func (h *Handler) audit(actor, action, sess, detail, errText string) {
	err := h.store.Audit(context.WithoutCancel(h.baseCtx), memory.AuditRecord{Time: h.now(), Actor: actor,
		Action: action, Session: sess, Detail: detail, Error: errText})
	if err != nil {
		h.log.Error("audit", "err", err)
	}
}

// auditTools records every tool call of a turn in the audit log.
func (h *Handler) auditTools(m channels.Message, res agent.Result) {
	for _, e := range res.Trace {
		if e.Kind != agent.TraceTool {
			continue
		}
		h.audit(m.UserKey(), "tool."+e.Tool, m.Target().String(), e.Args, e.Error)
	}
}

func batchText(batch []item) string {
	if len(batch) == 1 {
		return withQuote(batch[0].msg)
	}
	var b strings.Builder
	for i, it := range batch {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if !it.msg.Direct && it.msg.Sender.Name != "" {
			b.WriteString(it.msg.Sender.Name + ": ")
		}
		b.WriteString(withQuote(it.msg))
	}
	return b.String()
}

// withQuote puts the replied-to message, wrapped as untrusted content, in
// front of the text: it may be another person's words, never instructions.
func withQuote(m channels.Message) string {
	if m.Quote == nil {
		return m.Text
	}
	author := m.Quote.Author
	if m.Quote.FromBot {
		author = "you (the assistant)"
	}
	return agent.QuoteUntrusted(author, m.Quote.Text) + "\n" + m.Text
}

func batchMedia(batch []item) []agent.Media {
	var out []agent.Media
	for _, it := range batch {
		for _, m := range it.msg.Media {
			out = append(out, agent.Media{MIME: m.MIME, Name: m.Name, Data: m.Data})
		}
	}
	return out
}

func ids(batch []item) []uint64 {
	out := make([]uint64, len(batch))
	for i, it := range batch {
		out[i] = it.id
	}
	return out
}

func replyTo(m channels.Message) string {
	if m.Direct {
		return ""
	}
	return m.MessageID
}

// firstReceived is when the batch's earliest message was accepted (zero
// when none says): the turn's user message carries it, so the console's
// waterfall shows the wait in the queue.
func firstReceived(batch []item) time.Time {
	var first time.Time
	for _, it := range batch {
		if !it.received.IsZero() && (first.IsZero() || it.received.Before(first)) {
			first = it.received
		}
	}
	return first
}
