package outbound

import (
	"strings"
	"unicode"

	"github.com/switchboard-bot/switchboard/channels"
)

// DefaultMaxChunks is how many platform messages one answer may take when
// Options.MaxChunks is unset (config agent.max_answer_chunks).
const DefaultMaxChunks = 8

// TruncatedNote ends the last delivered chunk of an answer that was cut to
// the chunk cap. It is Markdown, formatted by the channel like the answer.
const TruncatedNote = "… (answer truncated: too long)"

// Format formats markdown through ch and caps it at MaxChunks messages, as
// Deliver does (capFormat); truncated reports a cut. The hub uses it to
// prepare an answer's first chunk before the turn's commit.
func (o *Outbound) Format(ch channels.Channel, markdown string) (chunks []channels.Chunk, truncated bool) {
	return capFormat(ch, markdown, o.MaxChunks())
}

// capFormat formats md through ch and bounds the result to max chunks. An
// answer that needs more is cut at a word boundary and ends with
// TruncatedNote, so whatever length the model produced, a chat receives at
// most max messages for it. truncated reports the cut.
func capFormat(ch channels.Channel, md string, max int) (chunks []channels.Chunk, truncated bool) {
	chunks = ch.Format(md)
	if max <= 0 || len(chunks) <= max {
		return chunks, false
	}
	// The first max chunks show roughly the first `keep` runes of the
	// Markdown; markup and escaping make the estimate imprecise, so shrink
	// until the cut answer plus the note fits.
	keep := 0
	for _, c := range chunks[:max] {
		n := len([]rune(c.Plain))
		if n == 0 {
			n = len([]rune(c.Text))
		}
		keep += n
	}
	runes := []rune(md)
	keep = min(keep, len(runes))
	for range 24 {
		cut := cutAtSpace(runes[:keep])
		if strings.Count(cut, "```")%2 == 1 {
			cut += "\n```" // close a code block the cut left open, so the note is text
		}
		out := ch.Format(cut + "\n\n" + TruncatedNote)
		if len(out) <= max {
			return out, true
		}
		keep = keep * 7 / 8
	}
	// A formatter that never fits (should not happen): keep max-1 chunks of
	// the answer and let the note be the last message.
	note := ch.Format(TruncatedNote)
	return append(chunks[:max-1:max-1], note...), true
}

// cutAtSpace returns r as a string cut back to its last whitespace when one
// is near the end, so a truncated answer does not end mid-word.
func cutAtSpace(r []rune) string {
	for i := len(r) - 1; i >= 0 && i >= len(r)-200; i-- {
		if unicode.IsSpace(r[i]) {
			return strings.TrimRightFunc(string(r[:i]), unicode.IsSpace)
		}
	}
	return string(r)
}
