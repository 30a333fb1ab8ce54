package hub

import (
	"context"
	"strings"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/agent/tools"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// The turn's commit (issue 19): with a memory.Lifecycle store the hub commits
// the turn itself (agent.Request.Commit), and with it, in one transaction,
// what it decided about the turn — the audit records of its tool calls and the
// send intent of the answer's first chunk. Delivery then starts with a
// platform call, and its receipt goes with the inbox items it finishes
// (channels/outbound, deliveryrun.go): Accept, commit, receipt — three
// writes a message.
//
// The first intent is committed only when nothing of the turn is on the
// platform yet (no streamed draft, no record of an earlier run): otherwise the
// delivery reads the outbox and works from it as before. Before the commit the
// hook takes the chat's send slot from a Pacer channel, so the intent is not
// written long before its platform call; a canceled wait commits without it.
type turnCommit struct {
	h       *Handler
	lc      memory.Lifecycle
	ch      channels.Channel
	batch   []item
	turnID  string
	st      *outbound.Streamer
	wait    context.Context // the turn's context, for the pacer
	release func()          // gives the turn's slot back (idempotent)

	// Set by hook.
	used     bool               // the agent committed through the hook
	pending  bool               // the commit failed; commit holds it for recommit
	commit   memory.TurnCommit  // the commit last tried
	prepared *outbound.Prepared // the delivery's committed first intent
	answer   string             // the text prepared for delivery
	skipped  bool               // AlreadySent: the commit finished the items

	files     *fileQueue         // this run's send_file queue (sendfile.go)
	sending   []tools.QueuedFile // the files whose intents the commit carries
	fileIDs   []uint64           // their intents' record ids, once committed
	fileFirst int                // index of the first file intent in commit.Intents

	voice *voiceMark // this run's "the user spoke" (voice.go)
}

// hook is agent.Request.Commit.
func (tc *turnCommit) hook(ctx context.Context, turn memory.Turn, trace []agent.TraceEntry) error {
	h := tc.h
	last := tc.batch[len(tc.batch)-1].msg
	key := last.Target().String()
	tc.reset(tc.st)
	tc.used = true
	tc.commit = memory.TurnCommit{Turn: &turn, Audit: append(h.toolAudit(last, trace), h.failoverAudit(last, turn.Models)...)}
	var chunks []channels.Chunk
	paced := false
	if len(turn.Sources) > 0 {
		tc.sending = tc.files.queued() // a turn that answers nothing sends no file
	}
	if len(turn.Sources) > 0 && tc.quiet() {
		answer := turn.Answer
		if strings.TrimSpace(answer) == "" {
			answer = noAnswer
		}
		if h.admin != nil && len(tc.sending) == 0 && h.admin.AlreadySent(tc.turnID, key, answer) {
			tc.commit.Done, tc.skipped = ids(tc.batch), true // send_message already delivered this very text here
		} else {
			tc.answer = h.caps.withTruncationNote(tc.batch, answer)
			chunks, paced = tc.firstChunk(last.Target())
		}
	}
	if len(chunks) > 0 {
		tc.commit.Intents = []memory.OutboxRecord{{Target: key, TurnID: tc.turnID,
			Chunk: 0, Text: chunks[0].Text, Status: memory.OutboxPending}}
	}
	tc.fileFirst = len(tc.commit.Intents)
	tc.commit.Intents = append(tc.commit.Intents, fileIntents(key, tc.turnID, tc.sending)...)
	tc.commit.Intents = append(tc.commit.Intents, tc.voiceIntents(key, turn)...) // after the files: their indexes stand
	if tc.release != nil {
		tc.release()
	}
	// ctx is the agent's commit context: not canceled with the turn, bounded.
	intents, err := tc.lc.CommitTurn(ctx, key, tc.commit)
	if err != nil {
		tc.pending, tc.skipped = true, false
		return err
	}
	tc.settle(intents, chunks, paced)
	return nil
}

// reset forgets what an earlier run of the turn committed; st is this run's
// streamer.
func (tc *turnCommit) reset(st *outbound.Streamer) {
	*tc = turnCommit{h: tc.h, lc: tc.lc, ch: tc.ch, batch: tc.batch, turnID: tc.turnID, wait: tc.wait, st: st, release: tc.release,
		files: tc.files, voice: tc.voice}
}

// settle records a successful commit's prepared delivery.
func (tc *turnCommit) settle(intents []uint64, chunks []channels.Chunk, paced bool) {
	tc.pending = false
	if n := len(tc.sending); n > 0 && len(intents) >= tc.fileFirst+n {
		tc.fileIDs = intents[tc.fileFirst : tc.fileFirst+n]
	}
	if len(intents) > 0 && len(chunks) > 0 && tc.fileFirst > 0 {
		tc.prepared = &outbound.Prepared{Chunks: chunks, Intent: intents[0], Paced: paced}
	}
}

// outFiles are the files to deliver after the answer: those the commit
// carried, or (the agent committed the turn itself) those queued.
func (tc *turnCommit) outFiles() []outbound.OutFile {
	if tc.used {
		return outFiles(tc.sending, tc.fileIDs)
	}
	return outFiles(tc.files.queued(), nil)
}

// quiet reports whether nothing of the turn can be on the platform yet. The
// streamer is stopped first: after the commit no draft may be sent.
func (tc *turnCommit) quiet() bool {
	if tc.st == nil {
		return true
	}
	return tc.st.Quiet()
}

// firstChunk formats the answer and takes chunk 0's send slot; no chunks when
// the wait was canceled (the delivery then records its own intents).
func (tc *turnCommit) firstChunk(target channels.Target) ([]channels.Chunk, bool) {
	h := tc.h
	chunks, truncated := h.out.Format(tc.ch, tc.answer)
	if len(chunks) == 0 {
		return nil, false
	}
	if truncated {
		h.log.Warn("answer too long; delivering it truncated", "target", target.String(), "turn", tc.turnID,
			"chars", len(tc.answer), "max_chunks", h.out.MaxChunks())
	}
	if p, ok := tc.ch.(channels.Pacer); ok {
		if err := p.WaitSendSlot(tc.wait, target); err != nil {
			return nil, false
		}
		return chunks, true
	}
	return chunks, false
}

// recommit retries the held commit after a storage failure.
func (tc *turnCommit) recommit(ctx context.Context, key string) error {
	if tc.skipped {
		tc.commit.Done = ids(tc.batch)
	}
	intents, err := tc.lc.CommitTurn(ctx, key, tc.commit)
	if err != nil {
		return err
	}
	var chunks []channels.Chunk
	if tc.fileFirst > 0 {
		// The slot taken before the first try is stale now: wait again.
		chunks, _ = tc.h.out.Format(tc.ch, tc.answer)
	}
	tc.settle(intents, chunks, false)
	return nil
}

// noAnswer is delivered when the model's answer is empty.
const noAnswer = "(I have no answer to that.)"

// failoverAudit records a turn answered (in part) by a fallback model
// endpoint: "model.failover", detail "answered by llama3.1 (fallback 1)".
func (h *Handler) failoverAudit(m channels.Message, models []memory.ModelUsage) []memory.AuditRecord {
	var by []string
	for _, u := range models {
		if u.Endpoint != "" && u.Endpoint != "primary" {
			by = append(by, u.Model+" ("+u.Endpoint+")")
		}
	}
	if len(by) == 0 {
		return nil
	}
	return []memory.AuditRecord{{Time: h.now(), Actor: m.UserKey(), Action: "model.failover",
		Session: m.Target().String(), Detail: "answered by " + strings.Join(by, ", then ")}}
}

// toolAudit is the audit records of a turn's tool calls.
func (h *Handler) toolAudit(m channels.Message, trace []agent.TraceEntry) []memory.AuditRecord {
	var out []memory.AuditRecord
	for _, e := range trace {
		if e.Kind != agent.TraceTool {
			continue
		}
		out = append(out, memory.AuditRecord{Time: h.now(), Actor: m.UserKey(), Action: "tool." + e.Tool,
			Session: m.Target().String(), Detail: e.Args, Error: e.Error})
	}
	return out
}
