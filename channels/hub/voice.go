package hub

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/outbound"
	"github.com/switchboard-bot/switchboard/memory"
)

// Voice replies (issue 32). When the user's message was a voice note that
// was transcribed (agent.EventSpoke), media.speech is set (Speech) and the
// chat's platform takes voice notes (channels.VoiceSender), the turn's
// commit carries one more outbox intent: the voice note, whose script is
// the answer made speakable (Speaker.Script). After the answer's text and
// its files, deliverThen finds that intent without a receipt and hands it to
// outbound.DeliverVoice, which speaks and sends it; the inbox items are
// cleared only after its receipt, so a crash in between replays exactly the
// voice note (channels/outbound voice.go). A failing speech endpoint costs
// the voice note only: one WARN, and the text answer stands. Other
// platforms get the text only.

// Speaker reads answers aloud (agent/media.Speaker).
type Speaker interface {
	// Script is what the voice note says for answer ("" = nothing).
	Script(answer string) string
	// Speak returns the script read aloud as OGG/Opus.
	Speak(ctx context.Context, script string) ([]byte, error)
}

// voiceState is the handler's voice-reply settings.
type voiceState struct {
	speech func() Speaker // HandlerOptions.Speech; nil or a nil result = no voice replies
	since  time.Time      // intents older than this are from an earlier process (resends)
}

// voiceMark records that a turn run's user spoke (agent.EventSpoke).
type voiceMark struct{ spoke atomic.Bool }

// onEvent marks the run when the agent reports a transcribed voice note.
func (m *voiceMark) onEvent(ev agent.Event) {
	if m != nil && ev.Kind == agent.EventSpoke {
		m.spoke.Store(true)
	}
}

// speaker is the current Speaker for ch, or nil when ch's chats get no
// voice replies.
func (h *Handler) speaker(ch channels.Channel) Speaker {
	if h.voice.speech == nil {
		return nil
	}
	if _, ok := ch.(channels.VoiceSender); !ok {
		return nil
	}
	return h.voice.speech()
}

// voiceIntents is the voice note's intent for the turn's commit (none when
// the user did not speak, the turn answers nothing, or no voice can go out).
func (tc *turnCommit) voiceIntents(key string, turn memory.Turn) []memory.OutboxRecord {
	if tc.skipped || len(turn.Sources) == 0 || tc.voice == nil || !tc.voice.spoke.Load() {
		return nil
	}
	sp := tc.h.speaker(tc.ch)
	if sp == nil {
		return nil
	}
	script := sp.Script(turn.Answer)
	if script == "" {
		return nil
	}
	return []memory.OutboxRecord{outbound.VoiceIntent(key, tc.turnID, script)}
}

// recordVoice writes the voice note's intent of a turn the agent committed
// itself (a store without memory.Lifecycle), before the answer's delivery.
func (h *Handler) recordVoice(tc *turnCommit, res agent.Result, target channels.Target) {
	if tc.used || !res.Spoke {
		return
	}
	sp := h.speaker(tc.ch)
	if sp == nil {
		return
	}
	script := sp.Script(res.Text)
	if script == "" {
		return
	}
	if _, err := h.out.RecordVoice(context.WithoutCancel(h.baseCtx), target, tc.turnID, script); err != nil {
		h.log.Warn("voice reply not sent: its intent could not be recorded; the text answer stands", "turn", tc.turnID, "err", err)
	}
}

// pendingVoice is the turn's voice note still to send, if any.
func (h *Handler) pendingVoice(last channels.Message, d outbound.Delivery) (outbound.VoiceDelivery, bool) {
	ch, ok := h.Channel(last.Channel)
	if !ok || d.TurnID == "" {
		return outbound.VoiceDelivery{}, false
	}
	sp := h.speaker(ch)
	if sp == nil {
		return outbound.VoiceDelivery{}, false
	}
	v, ok, err := h.out.PendingVoice(context.WithoutCancel(h.baseCtx), d.TurnID, d.Target)
	if err != nil {
		h.log.Warn("voice reply not sent: the outbox could not be read", "turn", d.TurnID, "err", err)
		return outbound.VoiceDelivery{}, false
	}
	if !ok {
		return outbound.VoiceDelivery{}, false
	}
	v.Speak, v.Resend = sp.Speak, v.Created.Before(h.voice.since)
	return v, true
}

// deliverVoice sends the turn's voice note after its answer and files. It
// reports false when shutdown cut it short (the inbox items then stay for
// the replay).
func (h *Handler) deliverVoice(ctx context.Context, ch channels.Channel, d outbound.Delivery, v outbound.VoiceDelivery) bool {
	v.Target, v.ReplyTo = d.Target, d.ReplyTo
	if err := h.out.DeliverVoice(ctx, ch, v); err != nil {
		h.log.Info("voice note not delivered before shutdown; it is sent at the next start", "turn", d.TurnID)
		return false
	}
	return true
}
