package markup

import (
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
)

// DiscordChunks splits md for Discord, whose Markdown is close to what models
// write, so the text passes mostly as is. Chunks are at most limit UTF-16 code
// units (2000 for Discord; counting UTF-16 is conservative) and, where a cut
// allows it, at most maxLines lines (0 = no line limit), never breaking a code
// fence. @everyone and @here get a zero-width joiner after the @ so they cannot
// ping even if allowed_mentions is misconfigured. Plain is the chunk as plain
// text.
func DiscordChunks(md string, limit, maxLines int) []channels.Chunk {
	c := &chunker{
		limit:    limit,
		maxLines: maxLines,
		conv: func(p string) (string, string) {
			p = NeutralizeMentions(p)
			return p, NeutralizeMentions(Plain(p))
		},
		measure: utf16Len,
		escape:  func(s string) string { return s },
	}
	return c.run(md)
}

// NeutralizeMentions inserts a zero-width joiner after the @ of @everyone and
// @here (case-insensitively), so Discord does not treat them as mass mentions.
func NeutralizeMentions(s string) string {
	var b strings.Builder
	for {
		i := indexMassMention(s)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+1])
		b.WriteString("\u200d")
		s = s[i+1:]
	}
}

func indexMassMention(s string) int {
	lower := strings.ToLower(s)
	best := -1
	for _, m := range []string{"@everyone", "@here"} {
		if i := strings.Index(lower, m); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}
