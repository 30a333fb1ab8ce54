package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/jsonlite"
)

// Reading the server-sent events of a streamed chat completion.
//
// This keeps go-openai's stream semantics (data lines are chunks, "[DONE]"
// ends the stream, other lines are collected in case they turn out to be an
// error body, a `data: {"error":…}` line is the server's error, more than
// emptyMessagesLimit non-data lines in a row is an error) while decoding far
// less: one json.Decoder per stream (its scanner state is reused across
// chunks instead of rebuilt for each) into a chunk type that has only the
// fields the agent reads, and no regular expressions per line. The ordinary
// chunks (text and reasoning deltas) skip even that decoder: ssefast.go reads
// them by hand.

// emptyMessagesLimit is go-openai's default: how many non-data lines in a row
// a stream may send before it is given up as broken.
const emptyMessagesLimit = 300

// maxErrorBody bounds the non-data lines kept in case they are an error body.
const maxErrorBody = 64 << 10

// streamChunk is the part of a chat.completion.chunk the agent uses.
type streamChunk struct {
	Choices []streamChoice `json:"choices"`
	Usage   *openai.Usage  `json:"usage"`
	// Error is an error the server reported in an ordinary chunk
	// (OpenRouter: "error" next to choices whose finish_reason is "error").
	Error *openai.APIError `json:"error"`
	// XGroq carries Groq's usage (x_groq.usage) in its last chunk.
	XGroq *xGroq `json:"x_groq"`
}

// xGroq is the part of Groq's x_groq chunk field the agent reads.
type xGroq struct {
	Usage *openai.Usage `json:"usage"`
}

type streamChoice struct {
	Index        int                 `json:"index"`
	Delta        streamDelta         `json:"delta"`
	FinishReason openai.FinishReason `json:"finish_reason"`
}

type streamDelta struct {
	Content          string            `json:"content"`
	ReasoningContent string            `json:"reasoning_content"`
	ToolCalls        []openai.ToolCall `json:"tool_calls"`
	Reasoning        string            `json:"reasoning"` // Ollama's and newer vLLM's name for reasoning_content
}

// readerPool recycles the 4 KiB line readers of finished streams.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// sseStream reads the chunks of one response body. Close returns its
// buffers; the body itself is the caller's to close.
type sseStream struct {
	lines *bufio.Reader
	data  sseData
	dec   *json.Decoder // nil until a chunk needs it
	// slowOnly turns the fast path off, once dec reported an error (so that
	// every later Recv sees what dec says) or by a test.
	slowOnly bool
	// fastChunks counts the chunks decodeChunkFast read.
	fastChunks int
}

func newSSEStream(body io.Reader) *sseStream {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(body)
	s := &sseStream{lines: br}
	s.data.lines = br
	return s
}

// Close releases the stream's reader; the stream must not be used after.
func (s *sseStream) Close() {
	if s.lines != nil {
		s.lines.Reset(nil)
		readerPool.Put(s.lines)
		s.lines, s.data.lines = nil, nil
	}
}

// Recv decodes the next chunk into c (reset first). It returns io.EOF after
// "[DONE]", the server's error when the stream carried one, and the read
// error when the stream broke off.
//
// A payload that is one whole ordinary chunk is read by decodeChunkFast
// (ssefast.go) when the decoder stands between values (nothing but
// whitespace buffered, no payload half read); everything else (a usage or
// tool-call chunk, a value split over data lines, anything odd) goes through
// the json.Decoder exactly as before.
func (s *sseStream) Recv(c *streamChunk) error {
	// The previous chunk's choices are cleared and their array reused:
	// encoding/json appends into a slice's capacity without zeroing it.
	choices := c.Choices[:cap(c.Choices)]
	clear(choices)
	*c = streamChunk{Choices: choices[:0]}
	if s.betweenValues() {
		// What the decoder's next Read would do; a pending separator is
		// dropped, harmless between whole values.
		if s.data.err = s.data.next(); s.data.err == nil {
			if decodeChunkFast(s.data.cur, c) {
				s.data.cur = nil
				s.fastChunks++
				return nil
			}
			clear(choices) // partly written: the decoder starts afresh
			*c = streamChunk{Choices: choices[:0]}
		} else if len(s.data.cur) == 0 {
			// The stream's end ([DONE], a server error, a cut stream)
			// between whole values: what the decoder would return, without
			// making one for it.
			return s.data.err
		}
	}
	if s.dec == nil { // made at the first chunk the fast path leaves
		s.dec = json.NewDecoder(&s.data)
	}
	if err := s.dec.Decode(c); err != nil {
		s.slowOnly = true // the decoder keeps a syntax error: it has the stream from now on
		// The framing's own end ([DONE], a server error, a cut stream) comes
		// back as it is, unless a chunk was left incomplete before it.
		if s.data.err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return s.data.err
		}
		return fmt.Errorf("decode stream chunk: %w", err)
	}
	if c.Error != nil { // the fast path leaves such chunks to the decoder
		return &StreamError{APIError: c.Error}
	}
	return nil
}

// betweenValues reports whether the next payload may skip the decoder: the
// stream has not ended, the decoder has read all of the current payload and
// holds at most whitespace, and no decode failed so far.
func (s *sseStream) betweenValues() bool {
	if s.slowOnly || s.data.err != nil || len(s.data.cur) > 0 {
		return false
	}
	if s.dec == nil {
		return true
	}
	buffered := s.data.delivered - s.dec.InputOffset()
	if buffered == 0 {
		return true
	}
	if buffered > 64 {
		return false
	}
	var buf [64]byte
	n, _ := io.ReadFull(s.dec.Buffered(), buf[:buffered])
	return int64(n) == buffered && jsonlite.SkipSpace(buf[:n]) == n
}

// sseData is an io.Reader of the JSON payloads of a stream's data lines, one
// after the other, for a json.Decoder; it ends with io.EOF at "[DONE]" and
// with err set to what ended the stream otherwise.
type sseData struct {
	lines *bufio.Reader
	cur   []byte // rest of the current payload (points into lines' buffer or line)
	sep   bool   // a newline is owed after cur, so payloads never run together
	line  []byte // the current line when it spanned more than the buffer
	errs  []byte // non-data lines so far, in case they are an error body
	err   error
	// delivered counts the bytes Read returned: what the decoder has read.
	delivered int64
}

func (d *sseData) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(d.cur) == 0 {
		if d.sep {
			d.sep = false
			p[0] = '\n'
			d.delivered++
			return 1, nil
		}
		if d.err != nil {
			return 0, d.err
		}
		d.err = d.next()
	}
	n := copy(p, d.cur)
	d.cur = d.cur[n:]
	d.delivered += int64(n)
	return n, nil
}

var (
	dataPrefix = []byte("data:")
	doneData   = []byte("[DONE]")
	errorData  = []byte(`{"error":`)
	objectKey  = []byte(`{"object"`)
	errorValue = []byte(`"error"`)
)

// isObjectError reports whether payload is vLLM's error object as its
// older releases stream it: {"object": "error", "message": …, "code": 400}
// (not wrapped in "error"). Ordinary chunks start with another key, or
// with "object" of another value.
func isObjectError(payload []byte) bool {
	rest, ok := bytes.CutPrefix(payload, objectKey)
	if !ok {
		return false
	}
	rest = bytes.TrimLeft(rest, " \t")
	rest, ok = bytes.CutPrefix(rest, []byte(":"))
	return ok && bytes.HasPrefix(bytes.TrimLeft(rest, " \t"), errorValue)
}

// next reads lines up to the next data payload and sets d.cur to it; it
// returns what ends the stream instead.
func (d *sseData) next() error {
	empty := 0
	for {
		line, err := d.readLine()
		if err != nil {
			return d.streamError(err)
		}
		line = bytes.TrimSpace(line)
		payload, isData := bytes.CutPrefix(line, dataPrefix)
		if isData {
			payload = bytes.TrimLeft(payload, " \t\r\n\f")
			if bytes.HasPrefix(payload, errorData) {
				d.errs = append(d.errs[:0], payload...) // the error alone, not lines before it
				return d.streamError(nil)
			}
			if isObjectError(payload) { // read as {"error": payload}
				d.errs = append(append(append(d.errs[:0], errorData...), payload...), '}')
				return d.streamError(nil)
			}
			if bytes.Equal(payload, doneData) {
				return io.EOF
			}
			if len(payload) > 0 {
				d.cur, d.sep = payload, true
				return nil
			}
			// An empty data line carries no chunk: counted like the
			// other lines without one.
		}
		if len(line) > 0 && line[0] == ':' {
			// An SSE comment: a keep-alive (": OPENROUTER PROCESSING",
			// DeepSeek's ": keep-alive"), sent while a slow answer is
			// prepared. Neither part of an error body nor a sign of a
			// broken stream; the idle timeout still bounds a stream of
			// nothing else.
			continue
		}
		d.keep(line)
		if empty++; empty > emptyMessagesLimit {
			return openai.ErrTooManyEmptyStreamMessages
		}
	}
}

// readLine returns the next line, newline included. The slice is valid until
// the next call. A last line without its newline is dropped with the read
// error, as go-openai does.
func (d *sseData) readLine() ([]byte, error) {
	line, err := d.lines.ReadSlice('\n')
	if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	// A line longer than the buffer (a big tool-call chunk).
	d.line = append(d.line[:0], line...)
	for {
		line, err = d.lines.ReadSlice('\n')
		d.line = append(d.line, line...)
		if err == nil {
			return d.line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

func (d *sseData) keep(line []byte) {
	if len(d.errs)+len(line) <= maxErrorBody {
		d.errs = append(d.errs, line...)
	}
}

// streamError is the server's error when the kept non-data lines are one,
// readErr (or io.ErrUnexpectedEOF for a stream that ended without "[DONE]")
// otherwise; as go-openai reports them.
func (d *sseData) streamError(readErr error) error {
	if len(d.errs) > 0 {
		var resp openai.ErrorResponse
		if json.Unmarshal(d.errs, &resp) == nil && resp.Error != nil {
			return &StreamError{APIError: resp.Error}
		}
	}
	if readErr == nil || errors.Is(readErr, io.EOF) {
		// go-openai hands the stream's plain EOF on; streamAcc then finds
		// no finish reason and reports the stream as cut.
		return io.EOF
	}
	return readErr
}
