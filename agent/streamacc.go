package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// finishLength is the finish reason of an answer cut at its length: the
// server's max_tokens, or Options.MaxResponseChars.
const finishLength = string(openai.FinishReasonLength)

// cutMarker ends an answer that was cut at Options.MaxResponseChars.
func cutMarker(limit int) string {
	return fmt.Sprintf("… [answer cut: the model sent more than %d characters]", limit)
}

// withCutMarker is text, cut at the bound, followed by the marker.
func withCutMarker(text string, limit int) string {
	if strings.TrimSpace(text) == "" {
		return cutMarker(limit)
	}
	return text + "\n\n" + cutMarker(limit)
}

// streamAcc accumulates one streamed answer: content, reasoning, tool calls,
// usage and finish reason. With a limit it keeps at most limit characters
// (runes) of content, reasoning and tool calls (ids, names, arguments)
// together: the delta that passes the bound is kept up to it, cut is set and
// the caller stops reading. A model that misbehaves could otherwise stream until llm.timeout
// (hundreds of MB from a fast server), all of it kept in the session's
// history and sent again on every later turn.
type streamAcc struct {
	limit  int // 0 = no bound
	size   int // characters kept so far
	cut    bool
	text   strings.Builder
	reason strings.Builder
	merger toolCallMerger
	usage  *openai.Usage
	finish string
}

// take is the part of s that fits under the bound (all of s without one);
// it sets a.cut when s did not fit whole.
func (a *streamAcc) take(s string) string {
	if a.limit <= 0 || s == "" {
		return s
	}
	n := utf8.RuneCountInString(s)
	if a.size+n <= a.limit {
		a.size += n
		return s
	}
	room := a.limit - a.size
	a.size, a.cut = a.limit, true
	i := 0
	for ; room > 0 && i < len(s); room-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i]
}

// add takes one chunk (choice 0 only), passing the kept text to obs.
func (a *streamAcc) add(chunk *streamChunk, obs StreamObserver, emitted *bool) {
	switch {
	case chunk.Usage != nil:
		a.usage = chunk.Usage
	case chunk.XGroq != nil && chunk.XGroq.Usage != nil: // Groq without stream_options
		a.usage = chunk.XGroq.Usage
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if d.ReasoningContent == "" {
			d.ReasoningContent = d.Reasoning
		}
		if r := a.take(d.ReasoningContent); r != "" {
			a.reason.WriteString(r)
			if obs.Reasoning != nil {
				obs.Reasoning(r)
			}
		}
		if c := a.take(d.Content); c != "" {
			a.text.WriteString(c)
			*emitted = true
			if obs.Text != nil {
				obs.Text(c)
			}
		}
		for _, tc := range d.ToolCalls {
			// Ids and names count too (a megabyte name, or a flood of
			// calls with empty arguments, is as big as any text). A call
			// cut at the bound is not a call to run: once cut, response
			// drops every tool call.
			tc.ID = a.take(tc.ID)
			tc.Function.Name = a.take(tc.Function.Name)
			tc.Function.Arguments = a.take(tc.Function.Arguments)
			a.merger.add(tc)
		}
		if a.cut {
			return
		}
		if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
			a.finish = string(ch.FinishReason)
		}
	}
}

// response is the merged answer (Usage not set). A cut answer ends with the
// marker, has finish reason "length" and no tool calls.
func (a *streamAcc) response() ChatResponse {
	out := ChatResponse{Content: a.text.String(), Reasoning: a.reason.String(), FinishReason: a.finish}
	if a.cut {
		out.Content = withCutMarker(out.Content, a.limit)
		out.FinishReason = finishLength
		out.Cut = true
		return out
	}
	out.ToolCalls = a.merger.result()
	return out
}
