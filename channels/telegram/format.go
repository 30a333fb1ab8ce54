package telegram

import (
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// chunkLimit leaves headroom under Telegram's 4096-character limit for the
// entities the HTML expands to.
const chunkLimit = 4000

// Format converts the model's Markdown to Telegram HTML chunks under the
// message limit, code fences never broken (channels/markup).
func (c *Channel) Format(markdown string) []channels.Chunk {
	return markup.TelegramChunks(markdown, chunkLimit)
}
