package whatsapp

import (
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// WhatsApp's formatting is Slack mrkdwn's markers without its escaping and
// link syntax: *bold*, _italic_, ~strike~, `code`, ``` blocks, "> " quotes
// and "- "/"• " lists are the same, but WhatsApp shows &amp; literally and
// has no <url|label> links (it links bare URLs itself). So a chunk is
// channels/markup's Slack chunk rewritten: entities decoded, <url|label>
// written as "label (url)" and <url> as the URL. The rewrite never makes a
// chunk longer (an entity shrinks to one character, a link keeps its
// length), so markup's split under the limit holds, fences included.

// ChunkLimit is the longest text message the adapter sends (WhatsApp's
// limit is 4,096 characters).
const ChunkLimit = 4000

// Format implements channels.Channel.
func (c *Adapter) Format(md string) []channels.Chunk {
	return formatChunks(md, ChunkLimit)
}

func formatChunks(md string, limit int) []channels.Chunk {
	chunks := markup.SlackChunks(md, limit)
	for i := range chunks {
		chunks[i].Text = fromMrkdwn(chunks[i].Text)
	}
	return chunks
}

// fromMrkdwn rewrites Slack mrkdwn as WhatsApp text. In markup's mrkdwn a
// raw '<' only opens a link sequence it generated (text's '<' is &lt;).
func fromMrkdwn(s string) string {
	if !strings.ContainsAny(s, "&<") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		switch {
		case s[i] == '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			link := s[i+1 : i+end]
			if url, label, ok := strings.Cut(link, "|"); ok {
				b.WriteString(unescape(label) + " (" + unescape(url) + ")")
			} else {
				b.WriteString(unescape(link))
			}
			i += end + 1
		case strings.HasPrefix(s[i:], "&amp;"):
			b.WriteByte('&')
			i += len("&amp;")
		case strings.HasPrefix(s[i:], "&lt;"):
			b.WriteByte('<')
			i += len("&lt;")
		case strings.HasPrefix(s[i:], "&gt;"):
			b.WriteByte('>')
			i += len("&gt;")
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

var entities = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

func unescape(s string) string { return entities.Replace(s) }
