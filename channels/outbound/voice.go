package outbound

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/memory"
)

// Voice notes back to a chat that spoke (issue 32, media.speech).
//
// When the user's message was a voice note, the answer is delivered as text
// as always and then read aloud as a voice note (channels.VoiceSender,
// Telegram only). The voice note is a delivery of its own: its intent — an
// outbox record of the turn at chunk VoiceChunk whose Text is the VoicePlan
// (the script to read) as JSON — is committed with the turn (channels/hub),
// and DeliverVoice, after the answer's text and files, has the script spoken
// and sends the audio, then records the receipt on that intent. So:
//
//   - a crash before the receipt leaves the intent pending, and the replay at
//     start (PendingVoice) speaks and sends it again (the one window a
//     duplicate may occur in, counted as a resend like an answer chunk's);
//     the audio is not stored, only the script;
//   - a speech endpoint that fails (down, refusing, not OGG) logs one WARN,
//     the intent is marked failed and nothing more is said in the chat: the
//     text answer stands; a platform that refuses the voice note is logged
//     like any failed delivery and not retried.

// VoiceChunk is the outbox chunk number of a turn's voice note: below the
// files' (FileChunkBase) and far above any answer chunk.
const VoiceChunk = FileChunkBase - 1

// VoiceName and VoiceMIME name the voice note sent.
const (
	VoiceName = "answer.ogg"
	VoiceMIME = "audio/ogg"
)

// VoicePlan is what a voice note's intent records (OutboxRecord.Text, JSON).
type VoicePlan struct {
	Script string `json:"script"` // the words to read aloud
}

// VoiceIntent is the outbox intent of a turn's voice note.
func VoiceIntent(target, turnID, script string) memory.OutboxRecord {
	b, _ := json.Marshal(VoicePlan{Script: script}) // a string: cannot fail
	return memory.OutboxRecord{Target: target, TurnID: turnID, Chunk: VoiceChunk, Text: string(b), Status: memory.OutboxPending}
}

// RecordVoice writes a voice note's intent on its own (a store that cannot
// commit it with the turn); it returns the record id, 0 without an outbox.
func (o *Outbound) RecordVoice(ctx context.Context, target channels.Target, turnID, script string) (uint64, error) {
	if o.outbox == nil || turnID == "" {
		return 0, nil
	}
	id, err := o.outbox.OutboxIntent(ctx, VoiceIntent(target.String(), turnID, script))
	if err != nil {
		return 0, fmt.Errorf("record voice intent: %w", err)
	}
	return id, nil
}

// PendingVoice returns turnID's voice note for target if its newest intent
// has no receipt yet (ok false: none, or already delivered or failed).
func (o *Outbound) PendingVoice(ctx context.Context, turnID string, target channels.Target) (VoiceDelivery, bool, error) {
	if o.outbox == nil || turnID == "" {
		return VoiceDelivery{}, false, nil
	}
	recs, err := o.outbox.OutboxForTurn(ctx, turnID)
	if err != nil {
		return VoiceDelivery{}, false, fmt.Errorf("read outbox: %w", err)
	}
	var newest memory.OutboxRecord // a turn run again recorded its voice note again
	for _, r := range recs {
		if r.Chunk == VoiceChunk && r.Target == target.String() && r.ID > newest.ID {
			newest = r
		}
	}
	if newest.ID == 0 || newest.Status != memory.OutboxPending {
		return VoiceDelivery{}, false, nil
	}
	var p VoicePlan
	if err := json.Unmarshal([]byte(newest.Text), &p); err != nil || p.Script == "" {
		o.log.Error("unreadable voice intent; not sending it", "turn", turnID, "record", newest.ID, "err", err)
		return VoiceDelivery{}, false, nil
	}
	return VoiceDelivery{Target: target, TurnID: turnID, Intent: newest.ID, Script: p.Script, Created: newest.Created}, true, nil
}

// VoiceDelivery is one turn's voice note to deliver.
type VoiceDelivery struct {
	Target  channels.Target
	ReplyTo string
	TurnID  string
	Intent  uint64 // the intent's record id
	Script  string
	// Resend: the intent is from an earlier run (a crash after it).
	Resend bool
	// Created is when the intent was recorded (PendingVoice).
	Created time.Time
	// Speak reads the script aloud as OGG/Opus.
	Speak func(ctx context.Context, script string) ([]byte, error)
}

// DeliverVoice speaks d's script and sends it through ch (see the comment
// above). It returns an error only when ctx ended (shutdown: the intent
// stays pending for the replay); every other failure is logged and
// recorded on the intent, and the text answer stands.
func (o *Outbound) DeliverVoice(ctx context.Context, ch channels.Channel, d VoiceDelivery) error {
	vs, ok := ch.(channels.VoiceSender)
	if !ok || d.Speak == nil {
		o.voiceResult(ctx, d, memory.OutboxFailed, "", "voice notes cannot be sent here")
		return nil
	}
	audio, err := d.Speak(ctx, d.Script)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("speak the answer for %s: %w", d.Target, ctx.Err())
		}
		o.log.Warn("voice reply not sent: speech failed; the text answer stands",
			"target", d.Target.String(), "turn", d.TurnID, "err", err)
		o.voiceResult(ctx, d, memory.OutboxFailed, "", oneLineErr(err))
		return nil
	}
	if p, ok := ch.(channels.Pacer); ok {
		if err := p.WaitSendSlot(ctx, d.Target); err != nil {
			return fmt.Errorf("send the voice note to %s: %w", d.Target, err)
		}
	}
	if d.Resend {
		o.countResend(Delivery{Target: d.Target, TurnID: d.TurnID}, VoiceChunk, "voice")
	}
	out := channels.OutgoingFile{Target: d.Target, Name: VoiceName, MIME: VoiceMIME, Data: audio,
		Nonce: nonce(d.TurnID, VoiceChunk), ReplyTo: d.ReplyTo}
	pid, attempts, err := o.retry(ctx, func(ctx context.Context) (string, error) { return vs.SendVoice(ctx, out) })
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("send the voice note to %s: %w", d.Target, err)
	}
	if err != nil {
		o.failed.Add(1)
		o.obs.Delivery("failed")
		o.logFailure(ctx, "send_voice", Delivery{Target: d.Target, TurnID: d.TurnID}, VoiceChunk, attempts, err)
		o.voiceResult(ctx, d, memory.OutboxFailed, "", oneLineErr(err))
		return nil
	}
	o.sent.Add(1)
	o.obs.ChunkSent(d.Target.Channel)
	o.voiceResult(ctx, d, memory.OutboxDelivered, pid, "")
	return nil
}

// voiceResult records the voice note's receipt on its intent.
func (o *Outbound) voiceResult(ctx context.Context, d VoiceDelivery, status, pid, errText string) {
	if d.Intent == 0 || o.outbox == nil {
		return
	}
	if err := o.outbox.OutboxResult(context.WithoutCancel(ctx), d.Intent, status, pid, errText); err != nil {
		o.log.Error("record voice receipt", "err", err, "turn", d.TurnID)
	}
}
