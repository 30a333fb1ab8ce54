package outbound

import (
	"context"
	"fmt"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// SupersededDraft is what a streamed draft message becomes when the final
// answer needs fewer messages than the drafts took (the model's text before a
// tool call was longer than its answer, or the run after a crash answered
// shorter than the draft the first run left). No adapter deletes messages
// (Telegram's deleteMessage fails on messages older than 48 hours and Slack's
// chat.delete needs another scope), so the draft is edited to this short
// marker instead: the chat never shows a fragment of an answer.
const SupersededDraft = "(draft replaced by the answer above)"

// chunkRecords is what the outbox knows about one chunk of a turn's answer
// in one chat.
type chunkRecords struct {
	last   memory.OutboxRecord // newest record of the chunk, any status
	msg    memory.OutboxRecord // newest delivered record with a platform id
	hasMsg bool                // msg is set: the platform shows msg.Text as message msg.PlatformID
}

// turnState reads the outbox records of d's turn for d's target, per chunk.
// Records of another target (a chat that migrated) are ignored.
func (o *Outbound) turnState(ctx context.Context, d Delivery) (map[int]chunkRecords, error) {
	out := map[int]chunkRecords{}
	if o.outbox == nil || d.TurnID == "" {
		return out, nil
	}
	recs, err := o.outbox.OutboxForTurn(ctx, d.TurnID)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	target := d.Target.String()
	for _, r := range recs {
		if r.Target != target || IsFileChunk(r.Chunk) || r.Chunk == VoiceChunk { // files and the voice note are not the answer's (files.go, voice.go)
			continue
		}
		cur := out[r.Chunk]
		if cur.last.ID == 0 || r.ID > cur.last.ID {
			cur.last = r
		}
		if r.Status == memory.OutboxDelivered && r.PlatformID != "" && (!cur.hasMsg || r.ID > cur.msg.ID) {
			cur.msg, cur.hasMsg = r, true
		}
		out[r.Chunk] = cur
	}
	return out, nil
}

// unconfirmed reports whether the chunk's newest record is a send intent
// without a receipt and no earlier send of the chunk is known to have landed:
// the process died during the platform call.
func (c chunkRecords) unconfirmed() bool {
	return !c.hasMsg && c.last.ID != 0 && c.last.Status == memory.OutboxPending
}

// supersede turns the drafts of chunks n and beyond, which the final answer
// does not use, into SupersededDraft. A failure is logged, not returned: the
// answer itself was delivered.
func (o *Outbound) supersede(ctx context.Context, ch channels.Channel, d Delivery, n int, state map[int]chunkRecords) {
	ed, ok := ch.(channels.Editor)
	if !ok {
		return
	}
	var marker channels.Chunk
	for i, cr := range state {
		if i < n {
			continue
		}
		id, shown := cr.msg.PlatformID, cr.msg.Text
		if !cr.hasMsg {
			if !cr.unconfirmed() {
				continue
			}
			found, ok := o.verify(ctx, ch, d, i, channels.Chunk{Text: cr.last.Text}, cr.last)
			if !ok {
				continue
			}
			id, shown = found, cr.last.Text
		}
		if marker.Text == "" {
			cs := ch.Format(SupersededDraft)
			if len(cs) == 0 {
				return
			}
			marker = cs[0]
		}
		if shown == marker.Text {
			continue
		}
		if err := o.edit(ctx, ed, d, i, id, marker); err != nil {
			o.log.Warn("could not replace a draft the answer does not use", "target", d.Target.String(),
				"turn", d.TurnID, "chunk", i, "err", err)
		}
	}
}
