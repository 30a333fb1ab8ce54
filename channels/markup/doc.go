// Package markup owns outbound formatting: it turns the Markdown a model
// writes into each platform's markup and splits it into chunks under the
// platform's limit without breaking code fences or tags.
//
// Design decisions:
//   - Conversion parses with goldmark (CommonMark + GFM) and walks the AST with
//     this package's own renderer; no regular expressions. render.go holds the
//     renderer core, writer.go the line writer with its list and quote
//     prefixes, blocks.go and inline.go the block and inline nodes, escape.go
//     escaping and entity decoding. One walker serves three dialects — Telegram
//     HTML, Slack mrkdwn and plain text — so the plain fallback of a chunk
//     always says the same thing as its markup.
//   - Raw HTML written by the model is escaped and shown as text, never passed
//     through. Only absolute http(s)/mailto/ftp links (and tg:// on Telegram)
//     become links; other destinations are shown as "text (url)".
//   - Splitting (Split, split.go) works on the Markdown source: a line
//     scanner tracks fenced code blocks and the text is cut into units (words;
//     whole lines in code) that are packed greedily into chunks (pack.go),
//     cutting at the best-ranked place: blank line, line break, sentence end,
//     space, then inside a word. Lengths are counted in runes.
//   - The per-platform Chunks functions split the Markdown, convert each piece,
//     measure the result the way the platform counts (Telegram: UTF-16 units of
//     the HTML text, a conservative bound because Telegram counts after entity
//     parsing; Slack: runes; Discord: UTF-16 units, conservative) and re-split
//     any piece that grew past the limit with a proportionally smaller budget.
//     A piece that cannot shrink further is cut as escaped plain text, which is
//     always valid markup. Limits below MinLimit are raised to MinLimit.
//   - Telegram nesting follows the Bot API rules this package can guarantee
//     syntactically: no tags inside code/pre, no code or link inside a link,
//     blockquotes never nested (inner quotes are flattened) and closed around a
//     pre block. Telegram's own entity fixing handles the rest.
//   - Discord gets the Markdown mostly as written; @everyone/@here get a zero
//     width joiner after the @ as a second line of defence behind
//     allowed_mentions.
package markup
