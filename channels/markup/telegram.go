package markup

import "github.com/switchboard-bot/switchboard/channels"

// TelegramHTML converts Markdown to Telegram Bot API HTML (parse_mode=HTML):
// b, i, s, code, pre (<pre><code class="language-x"> for fenced code with a
// language), a href and blockquote; & < > escaped everywhere (and " in href).
// Headings become a bold line, lists "• item" / "1. item" lines indented by
// nesting, images a link to the image, tables an aligned <pre>, and raw HTML
// from the model is escaped so it shows as text.
func TelegramHTML(md string) string { return render(md, dTelegram) }

// TelegramChunks converts and splits md so that every chunk's Text is
// well-formed Telegram HTML (only the tags above, all closed and properly
// nested) of at most limit UTF-16 code units — counted on the HTML text
// itself, which is conservative because Telegram counts after parsing
// entities — and Plain is the same chunk as plain text (also within limit),
// for the "can't parse entities" fallback. Limits below MinLimit are raised.
func TelegramChunks(md string, limit int) []channels.Chunk {
	c := &chunker{
		limit:   limit,
		conv:    func(p string) (string, string) { return TelegramHTML(p), Plain(p) },
		measure: utf16Len,
		escape:  escapeHTML,
	}
	return c.run(md)
}
