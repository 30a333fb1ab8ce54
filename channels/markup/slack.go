package markup

import "github.com/switchboard-bot/switchboard/channels"

// SlackMrkdwn converts Markdown to Slack mrkdwn: *bold*, _italic_, ~strike~,
// `code`, ``` blocks (Slack takes no language tag), <url|text> links, "• "
// lists, "> " quotes and headings as *bold* lines. &, < and > are escaped as
// &amp; &lt; &gt; in text; the only raw < and > are the link sequences this
// function generates, whose URL has | < > and spaces percent-encoded.
func SlackMrkdwn(md string) string { return render(md, dSlack) }

// SlackChunks converts and splits md into chunks of at most limit runes
// (e.g. 3500), each valid mrkdwn on its own, with a plain-text twin.
func SlackChunks(md string, limit int) []channels.Chunk {
	c := &chunker{
		limit:   limit,
		conv:    func(p string) (string, string) { return SlackMrkdwn(p), Plain(p) },
		measure: runeCount,
		escape:  escapeHTML,
	}
	return c.run(md)
}
