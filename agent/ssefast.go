package agent

import (
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
)

// The fast path for the chunks that make up almost all of a stream: a delta
// of content or reasoning, a finish reason, no usage. decodeChunkFast reads
// such a payload by hand (internal/jsonlite) instead of through
// encoding/json's reflection; anything else (tool-call deltas, the usage
// chunk, an odd shape) is left to the stream's json.Decoder.
//
// Soundness is the contract: whenever decodeChunkFast(payload, c) reports
// true, json.Unmarshal(payload, &fresh) succeeds and fresh is
// reflect.DeepEqual to *c. So keys match as encoding/json matches them
// (case-insensitively, escapes unescaped), unknown keys are skipped but
// validated, null leaves a field as it is, and an integer must be one
// encoding/json reads into an int. Duplicate known keys, a known key with a
// value of another type, and tool_calls that are not null make it report
// false; reporting false is always allowed. ssefast_test.go fuzzes
// the claim.

// Keys, in the order of their bit in a reader's seen set.
var (
	chunkKeys  = []string{"choices", "usage", "error", "x_groq"}
	choiceKeys = []string{"index", "delta", "finish_reason"}
	deltaKeys  = []string{"content", "reasoning_content", "tool_calls", "reasoning"}
	usageKeys  = []string{"prompt_tokens", "completion_tokens", "total_tokens",
		"prompt_tokens_details", "completion_tokens_details"}
	promptDetailKeys     = []string{"audio_tokens", "cached_tokens"}
	completionDetailKeys = []string{"audio_tokens", "reasoning_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"}
)

// decodeChunkFast decodes payload, one whole data payload, into *c, which
// holds the zero chunk (Choices may be an empty slice with capacity, whose
// array it reuses). When it reports false *c may be partly written.
func decodeChunkFast(payload []byte, c *streamChunk) bool {
	r := chunkReader{b: payload}
	ok := r.object(chunkKeys, func(key int) bool {
		switch key {
		case 0:
			return r.choices(c)
		case 1:
			return r.usage(c)
		}
		return r.null() // a server's error or Groq's usage: left to the decoder
	})
	return ok && r.pos == len(r.b)
}

// chunkReader reads JSON from b at pos.
type chunkReader struct {
	b   []byte
	pos int
}

// space skips whitespace (servers rarely send any: checked first).
func (r *chunkReader) space() {
	if r.pos < len(r.b) && r.b[r.pos] > ' ' {
		return
	}
	r.pos += jsonlite.SkipSpace(r.b[r.pos:])
}

// consume reads c (after whitespace) if it comes next.
func (r *chunkReader) consume(c byte) bool {
	r.space()
	if r.pos < len(r.b) && r.b[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

// null reads a null if one comes next.
func (r *chunkReader) null() bool {
	r.space()
	if jsonlite.Null(r.b[r.pos:]) {
		r.pos += 4
		return true
	}
	return false
}

// object reads an object whose known keys are names: member is called with
// a key's index, the reader at its value, and must read that value; unknown
// keys' values are skipped. It reports false for a malformed object, a known
// key given twice or a member that reported false.
func (r *chunkReader) object(names []string, member func(key int) bool) bool {
	if !r.consume('{') {
		return false
	}
	if r.consume('}') {
		return true
	}
	var seen uint
	for {
		r.space()
		key, ok := r.key(names)
		if !ok || !r.consume(':') {
			return false
		}
		r.space()
		if key < 0 {
			n, ok := jsonlite.SkipValue(r.b[r.pos:])
			if !ok {
				return false
			}
			r.pos += n
		} else {
			if seen&(1<<key) != 0 || !member(key) {
				return false
			}
			seen |= 1 << key
		}
		if r.consume('}') {
			return true
		}
		if !r.consume(',') {
			return false
		}
	}
}

// key reads an object key and returns the index of the name it matches as
// encoding/json matches a field (exactly or case-insensitively after
// unescaping), -1 for none.
func (r *chunkReader) key(names []string) (int, bool) {
	n, plain, ok := jsonlite.ScanString(r.b[r.pos:])
	if !ok {
		return 0, false
	}
	raw := r.b[r.pos+1 : r.pos+n-1]
	r.pos += n
	if !plain || !isASCII(raw) {
		s, _, _ := jsonlite.Unquote(r.b[r.pos-n:]) // rare: allocates
		return match(names, s), true
	}
	for i, name := range names {
		if len(raw) == len(name) && (string(raw) == name || equalFoldASCII(raw, name)) {
			return i, true
		}
	}
	return -1, true
}

func match(names []string, key string) int {
	for i, name := range names {
		if strings.EqualFold(key, name) {
			return i
		}
	}
	return -1
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// equalFoldASCII is strings.EqualFold for ASCII b and name of equal length.
func equalFoldASCII(b []byte, name string) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if n := name[i]; 'A' <= n && n <= 'Z' {
			if c != n+'a'-'A' {
				return false
			}
		} else if c != n {
			return false
		}
	}
	return true
}

// choices reads the choices array into c.Choices, reusing its array.
func (r *chunkReader) choices(c *streamChunk) bool {
	if r.null() {
		c.Choices = nil
		return true
	}
	if !r.consume('[') {
		return false
	}
	list := c.Choices[:0]
	if list == nil {
		list = []streamChoice{} // encoding/json makes an empty array non-nil; no allocation
	}
	if !r.consume(']') {
		for {
			list = append(list, streamChoice{})
			if !r.choice(&list[len(list)-1]) {
				return false
			}
			if r.consume(']') {
				break
			}
			if !r.consume(',') {
				return false
			}
		}
	}
	c.Choices = list
	return true
}

// choice reads one choice object (null is refused: rare, and left to
// encoding/json).
func (r *chunkReader) choice(ch *streamChoice) bool {
	return r.object(choiceKeys, func(key int) bool {
		if r.null() {
			return true
		}
		switch key {
		case 0:
			return r.int(&ch.Index)
		case 1:
			return r.delta(&ch.Delta)
		}
		s, ok := r.finishReason()
		ch.FinishReason = s
		return ok
	})
}

// delta reads a delta object; a non-null tool_calls is refused.
func (r *chunkReader) delta(d *streamDelta) bool {
	return r.object(deltaKeys, func(key int) bool {
		if r.null() {
			return true
		}
		switch key {
		case 0:
			return r.str(&d.Content)
		case 1:
			return r.str(&d.ReasoningContent)
		case 3:
			return r.str(&d.Reasoning)
		}
		return false // tool_calls: merged by the slow path
	})
}

// str reads a JSON string into *s.
func (r *chunkReader) str(s *string) bool {
	v, n, ok := jsonlite.Unquote(r.b[r.pos:])
	r.pos += n
	*s = v
	return ok
}

// int reads a JSON integer that fits an int into *v.
func (r *chunkReader) int(v *int) bool {
	i, n, ok := jsonlite.Int(r.b[r.pos:])
	if !ok || int64(int(i)) != i {
		return false
	}
	r.pos += n
	*v = int(i)
	return true
}

// finishReason reads the finish reason's string, without allocating for the
// usual ones.
func (r *chunkReader) finishReason() (openai.FinishReason, bool) {
	n, plain, ok := jsonlite.ScanString(r.b[r.pos:])
	if ok && plain {
		switch string(r.b[r.pos+1 : r.pos+n-1]) {
		case "stop":
			r.pos += n
			return openai.FinishReasonStop, true
		case "length":
			r.pos += n
			return openai.FinishReasonLength, true
		case "tool_calls":
			r.pos += n
			return openai.FinishReasonToolCalls, true
		}
	}
	var s string
	ok = r.str(&s)
	return openai.FinishReason(s), ok
}

// usage reads the usage object (or null) into c.Usage, with its details.
func (r *chunkReader) usage(c *streamChunk) bool {
	if r.null() {
		c.Usage = nil
		return true
	}
	u := &openai.Usage{}
	ok := r.object(usageKeys, func(key int) bool {
		if r.null() {
			return true
		}
		switch key {
		case 0:
			return r.int(&u.PromptTokens)
		case 1:
			return r.int(&u.CompletionTokens)
		case 2:
			return r.int(&u.TotalTokens)
		case 3:
			if u.PromptTokensDetails == nil {
				u.PromptTokensDetails = &openai.PromptTokensDetails{}
			}
			d := u.PromptTokensDetails
			return r.object(promptDetailKeys, func(k int) bool {
				return r.null() || r.int([]*int{&d.AudioTokens, &d.CachedTokens}[k])
			})
		}
		if u.CompletionTokensDetails == nil {
			u.CompletionTokensDetails = &openai.CompletionTokensDetails{}
		}
		d := u.CompletionTokensDetails
		return r.object(completionDetailKeys, func(k int) bool {
			return r.null() || r.int([]*int{&d.AudioTokens, &d.ReasoningTokens,
				&d.AcceptedPredictionTokens, &d.RejectedPredictionTokens}[k])
		})
	})
	if ok {
		c.Usage = u
	}
	return ok
}
