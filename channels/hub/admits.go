package hub

import (
	"context"

	"github.com/switchboard-bot/switchboard/channels"
)

var _ channels.Admitter = (*Handler)(nil)

// Admits implements channels.Admitter: whether userID of channel may talk
// to the bot, decided by the same policy and pairing approvals as a message
// from that user — a direct one when direct is set (so in pairing mode an
// unknown user is admitted, to be sent a pairing code), else a message that
// mentions the bot in a group (access.groups off refuses it).
func (h *Handler) Admits(ctx context.Context, channel, userID string, direct bool) (bool, error) {
	msg := channels.Message{Channel: channel, Sender: channels.Sender{ID: userID}, Direct: direct, Mentioned: true}
	d, err := h.decide(ctx, &msg)
	if err != nil {
		return false, err
	}
	return d == channels.Allow || (direct && d == channels.NeedsPairing), nil
}
