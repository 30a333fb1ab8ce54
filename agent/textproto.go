package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Envelope is one reply of the JSON text tool protocol:
// {"type":"action","tool":"…","args":{…}} or {"type":"final","answer":"…"}.
type Envelope struct {
	Type   string          `json:"type"`
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Answer string          `json:"answer,omitempty"`
}

// Envelope types.
const (
	EnvelopeAction = "action"
	EnvelopeFinal  = "final"
)

// stripFence removes a surrounding Markdown code fence (```json … ```).
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return strings.TrimSpace(strings.TrimLeft(s, "`"))
	}
	s = s[nl+1:]
	if i := strings.LastIndex(s, "```"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// ParseEnvelope reads a model reply in the JSON text protocol. It tolerates a
// code fence around the object, text before it and text after it; it rejects
// duplicate keys, an unknown type, an action without a tool and a final
// without a string answer. Error texts are written for the model (repair).
func ParseEnvelope(text string) (Envelope, error) {
	fields, err := envelopeFields(stripFence(text))
	if err != nil {
		return Envelope{}, err
	}
	var env Envelope
	if env.Type, err = envelopeType(fields); err != nil {
		return Envelope{}, err
	}
	switch env.Type {
	case EnvelopeFinal:
		raw, ok := fields["answer"]
		if !ok {
			return Envelope{}, errors.New(`a "final" reply needs an "answer" string`)
		}
		if err := json.Unmarshal(raw, &env.Answer); err != nil {
			return Envelope{}, errors.New(`"answer" must be a string`)
		}
	case EnvelopeAction:
		if err := json.Unmarshal(fields["tool"], &env.Tool); err != nil || strings.TrimSpace(env.Tool) == "" {
			return Envelope{}, errors.New(`an "action" reply needs a "tool" name string`)
		}
		env.Tool = strings.TrimSpace(env.Tool)
		if env.Args, err = envelopeArgs(fields["args"]); err != nil {
			return Envelope{}, err
		}
	case "":
		return Envelope{}, errors.New(`missing "type" ("action" or "final")`)
	default:
		return Envelope{}, fmt.Errorf(`unknown "type" %q (use "action" or "final")`, env.Type)
	}
	return env, nil
}

// envelopeFields decodes the first JSON object in s (text before it is
// skipped, text after it ignored) into its raw fields, rejecting duplicate keys.
func envelopeFields(s string) (map[string]json.RawMessage, error) {
	start := strings.IndexByte(s, '{')
	if start < 0 {
		return nil, errors.New("no JSON object found in the reply")
	}
	dec := json.NewDecoder(strings.NewReader(s[start:]))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("the reply is not a JSON object: %v", err)
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("invalid JSON: object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON in %q: %w", key, err)
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		fields[key] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		if err == nil || err == io.EOF {
			err = errors.New("unterminated object")
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return fields, nil
}

// envelopeType is the reply's "type", lower-cased, or — when it is missing —
// inferred from an "answer" (final) or a "tool" (action) field; "" if neither.
func envelopeType(fields map[string]json.RawMessage) (string, error) {
	if raw, ok := fields["type"]; ok {
		var typ string
		if err := json.Unmarshal(raw, &typ); err != nil {
			return "", errors.New(`"type" must be the string "action" or "final"`)
		}
		return strings.ToLower(strings.TrimSpace(typ)), nil
	}
	if _, ok := fields["answer"]; ok {
		return EnvelopeFinal, nil
	}
	if _, ok := fields["tool"]; ok {
		return EnvelopeAction, nil
	}
	return "", nil
}

// envelopeArgs normalizes an action's "args": missing or null → {}, an
// object, or an object sent as a JSON-encoded string; returned compacted.
func envelopeArgs(raw json.RawMessage) (json.RawMessage, error) {
	args := bytes.TrimSpace(raw)
	var str string
	switch {
	case len(args) == 0 || string(args) == "null":
		args = []byte("{}")
	case args[0] == '{':
	case json.Unmarshal(args, &str) == nil && strings.HasPrefix(strings.TrimSpace(str), "{") && json.Valid([]byte(str)):
		args = []byte(strings.TrimSpace(str)) // args sent as a JSON-encoded string
	default:
		return nil, errors.New(`"args" must be a JSON object`)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return nil, fmt.Errorf(`"args" is not valid JSON: %w`, err)
	}
	return compact.Bytes(), nil
}

// plainTextAnswer is reply as an answer when it is prose rather than a
// broken envelope: small local models often answer in plain text however
// the protocol is explained. Prose is a non-empty reply (fence removed)
// that does not start with '{' and does not mention a "type" key; anything
// else is an envelope gone wrong, not something to show the user.
func plainTextAnswer(reply string) (string, bool) {
	text := stripFence(reply)
	if text == "" || strings.HasPrefix(text, "{") || strings.Contains(text, `"type"`) {
		return "", false
	}
	return text, true
}

// answerStreamer extracts the "answer" string of a {"type":"final",…} reply
// while it is being streamed, so the user sees the answer grow without ever
// seeing the envelope. It only streams when "type":"final" came before
// "answer"; otherwise nothing is emitted and the answer is sent whole once
// the reply is complete. Feed is O(new bytes) amortized.
type answerStreamer struct {
	emit     func(string)
	buf      []byte
	pos      int
	st       int
	key      string
	typ      string
	streamed strings.Builder
	answered bool
	// generic value skipping
	skDepth int
	skStr   bool
	skEsc   bool
	skBegun bool
}

const (
	asPre = iota
	asKey
	asColon
	asValue
	asSkip
	asAnswer
	asStop
)

func (a *answerStreamer) Feed(delta string) {
	a.buf = append(a.buf, delta...)
	for a.st != asStop && a.step() {
	}
}

// Streamed is everything emitted so far.
func (a *answerStreamer) Streamed() string { return a.streamed.String() }

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// step advances the state machine; false means "need more input".
func (a *answerStreamer) step() bool {
	b := a.buf
	for a.st != asAnswer && a.st != asSkip && a.pos < len(b) && isWS(b[a.pos]) {
		a.pos++
	}
	if a.pos >= len(b) {
		return false
	}
	switch a.st {
	case asPre:
		switch {
		case b[a.pos] == '{':
			a.pos++
			a.st = asKey
		case bytes.HasPrefix(b[a.pos:], []byte("```")):
			nl := bytes.IndexByte(b[a.pos:], '\n')
			if nl < 0 {
				return false
			}
			a.pos += nl + 1
		case len(b)-a.pos < 3 && bytes.HasPrefix([]byte("```"), b[a.pos:]):
			return false // maybe the start of a fence
		default:
			a.st = asStop // prose before the object: no streaming
		}
	case asKey:
		switch b[a.pos] {
		case ',':
			a.pos++
		case '}':
			a.st = asStop
		case '"':
			s, n, ok := a.readString(a.pos)
			if !ok {
				return false
			}
			a.key, a.pos, a.st = s, a.pos+n, asColon
		default:
			a.st = asStop
		}
	case asColon:
		if b[a.pos] != ':' {
			a.st = asStop
			return true
		}
		a.pos++
		a.st = asValue
	case asValue:
		switch {
		case a.key == "type" && b[a.pos] == '"':
			s, n, ok := a.readString(a.pos)
			if !ok {
				return false
			}
			if a.typ != "" {
				a.st = asStop // duplicate type: the parser decides
				return true
			}
			a.typ = strings.ToLower(strings.TrimSpace(s))
			a.pos += n
			a.st = asKey
		case a.key == "answer" && a.typ == EnvelopeFinal && b[a.pos] == '"' && !a.answered:
			a.pos++
			a.st = asAnswer
		case a.key == "answer" && a.answered:
			a.st = asStop // duplicate answer: the parser decides
		default:
			a.st, a.skDepth, a.skStr, a.skEsc, a.skBegun = asSkip, 0, false, false, false
		}
	case asSkip:
		return a.skip()
	case asAnswer:
		return a.answer()
	}
	return true
}

// readString reads a complete JSON string starting at i (which holds '"').
func (a *answerStreamer) readString(i int) (string, int, bool) {
	b := a.buf
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			var s string
			if err := json.Unmarshal(b[i:j+1], &s); err != nil {
				a.st = asStop
				return "", 0, false
			}
			return s, j + 1 - i, true
		}
	}
	return "", 0, false
}

// skip consumes one JSON value of any kind (resumable).
func (a *answerStreamer) skip() bool {
	b := a.buf
	for ; a.pos < len(b); a.pos++ {
		c := b[a.pos]
		if a.skStr {
			switch {
			case a.skEsc:
				a.skEsc = false
			case c == '\\':
				a.skEsc = true
			case c == '"':
				a.skStr = false
				if a.skDepth == 0 {
					a.pos++
					a.st = asKey
					return true
				}
			}
			continue
		}
		switch c {
		case '"':
			a.skStr, a.skBegun = true, true
		case '{', '[':
			a.skDepth++
			a.skBegun = true
		case '}', ']':
			if a.skDepth == 0 { // end of the enclosing object after a scalar
				a.st = asKey
				return true
			}
			a.skDepth--
			if a.skDepth == 0 {
				a.pos++
				a.st = asKey
				return true
			}
		case ',':
			if a.skDepth == 0 {
				a.st = asKey
				return true
			}
		default:
			if !isWS(c) {
				a.skBegun = true
			}
		}
	}
	return false
}

// answer emits the decoded answer string as far as it is complete.
func (a *answerStreamer) answer() bool {
	b := a.buf
	start := a.pos
	flush := func(end int) bool {
		if end > start {
			var s string
			if err := json.Unmarshal([]byte(`"`+string(b[start:end])+`"`), &s); err != nil {
				a.st = asStop
				return false
			}
			a.streamed.WriteString(s)
			a.emit(s)
		}
		a.pos = end
		start = end
		return true
	}
	for i := start; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			if !flush(i) {
				return true
			}
			a.pos = i + 1
			a.answered = true
			a.st = asKey
			return true
		case c == '\\':
			need := 2
			if i+1 < len(b) && b[i+1] == 'u' {
				need = 6
				if i+6 <= len(b) && isHighSurrogate(b[i+2:i+6]) {
					need = 12 // wait for the low surrogate escape too
				}
			}
			if i+need > len(b) {
				flush(i)
				return false
			}
			if need == 12 && !(b[i+6] == '\\' && b[i+7] == 'u') {
				need = 6
			}
			i += need
		default:
			if c >= utf8.RuneSelf && !utf8.FullRune(b[i:]) {
				flush(i)
				return false
			}
			i++
		}
	}
	flush(len(b))
	return false
}

func isHighSurrogate(hex []byte) bool {
	if len(hex) != 4 {
		return false
	}
	h := strings.ToLower(string(hex))
	return h[0] == 'd' && h[1] >= '8' && h[1] <= 'b'
}

// reconcile says what to send once the whole answer is known, given what was
// streamed: the remainder, or a reset and the whole answer.
func reconcile(streamed, answer string) (reset bool, rest string) {
	if strings.HasPrefix(answer, streamed) {
		return false, answer[len(streamed):]
	}
	return true, answer
}
