package hub

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
)

// Input caps (agent.max_message_chars, agent.max_turn_chars). A message
// longer than the message cap is cut in Handle, before it is written to the
// inbox, so neither the store, the model nor any later turn's history ever
// holds more; the messages merged into one turn (those that arrived while the
// previous turn ran) are cut again to the turn cap before the agent sees
// them. Each cut ends with a marker the model sees,
//
//	[… truncated: message was N characters, limit M]
//
// and the answer starts with a short note, so the user learns that only part
// of the text was read whatever the model says. Characters are Unicode code
// points.
const (
	DefaultMaxMessageChars = 16000
	DefaultMaxTurnChars    = 48000
)

// inputCaps are the limits in force; the zero value means the defaults.
type inputCaps struct {
	message, turn atomic.Int64
}

func (c *inputCaps) set(message, turn int) {
	if message <= 0 {
		message = DefaultMaxMessageChars
	}
	if turn <= 0 {
		turn = DefaultMaxTurnChars
	}
	c.message.Store(int64(message))
	c.turn.Store(int64(max(turn, message)))
}

func (c *inputCaps) limits() (message, turn int) {
	message, turn = int(c.message.Load()), int(c.turn.Load())
	if message <= 0 {
		message = DefaultMaxMessageChars
	}
	if turn <= 0 {
		turn = DefaultMaxTurnChars
	}
	return message, turn
}

// SetInputLimits changes the caps on one message and on one turn's text
// (<= 0: the default). Messages already in the inbox keep the cut they got.
func (h *Handler) SetInputLimits(maxMessageChars, maxTurnChars int) {
	h.caps.set(maxMessageChars, maxTurnChars)
}

var (
	messageCutRe = regexp.MustCompile(`\n\n\[… truncated: message was (\d+) characters, limit (\d+)\]$`)
	turnCutRe    = regexp.MustCompile(`\n\n\[… truncated: these messages were (\d+) characters together, limit (\d+)\]$`)
)

// cutChars keeps the first limit characters of s; n is the length of s in
// characters, cut whether anything was removed.
func cutChars(s string, limit int) (head string, n int, cut bool) {
	if len(s) <= limit { // bytes >= characters
		return s, utf8.RuneCountInString(s), false
	}
	n = utf8.RuneCountInString(s)
	if n <= limit {
		return s, n, false
	}
	i, count := 0, 0
	for i < len(s) && count < limit {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i], n, true
}

// capMessage cuts msg's text (and a quoted message's text) to the message cap.
func (c *inputCaps) capMessage(msg channels.Message) (channels.Message, bool) {
	limit, _ := c.limits()
	head, n, cut := cutChars(msg.Text, limit)
	if cut {
		msg.Text = fmt.Sprintf("%s\n\n[… truncated: message was %d characters, limit %d]", head, n, limit)
	}
	if msg.Quote != nil {
		if qh, qn, qcut := cutChars(msg.Quote.Text, limit); qcut {
			q := *msg.Quote
			q.Text = fmt.Sprintf("%s\n\n[… truncated: the quoted message was %d characters, limit %d]", qh, qn, limit)
			msg.Quote = &q
			cut = true
		}
	}
	return msg, cut
}

// turnText is the text of one turn: the batch's messages, cut to the turn
// cap. A single message is only bound by the message cap (its marker may take
// it a little over a turn cap equal to the message cap).
func (c *inputCaps) turnText(batch []item) string {
	_, limit := c.limits()
	text := batchText(batch)
	if len(batch) == 1 {
		return text
	}
	if head, n, cut := cutChars(text, limit); cut {
		text = fmt.Sprintf("%s\n\n[… truncated: these messages were %d characters together, limit %d]", head, n, limit)
	}
	return text
}

// truncationNote is the note put in front of the answer when the turn's
// input was cut (empty if nothing was).
func (c *inputCaps) truncationNote(batch []item) string {
	var notes []string
	for _, it := range batch {
		if m := messageCutRe.FindStringSubmatch(it.msg.Text); m != nil {
			notes = append(notes, fmt.Sprintf("your message was %s characters long, so I read only the first %s",
				groupDigits(m[1]), groupDigits(m[2])))
		}
	}
	if len(notes) > 1 {
		notes = []string{fmt.Sprintf("%d of your messages were too long, so I read only the beginning of each", len(notes))}
	}
	if m := turnCutRe.FindStringSubmatch(c.turnText(batch)); m != nil {
		notes = append(notes, fmt.Sprintf("your messages together were %s characters long, so I read only the first %s",
			groupDigits(m[1]), groupDigits(m[2])))
	}
	if len(notes) == 0 {
		return ""
	}
	return "(Note: " + strings.Join(notes, "; ") + ".)"
}

// withTruncationNote puts the truncation note, if any, in front of answer.
func (c *inputCaps) withTruncationNote(batch []item, answer string) string {
	if note := c.truncationNote(batch); note != "" {
		return note + "\n\n" + answer
	}
	return answer
}

// groupDigits writes 950000 as 950,000.
func groupDigits(s string) string {
	if _, err := strconv.Atoi(s); err != nil || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
