package loadtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// rawEchoServer serves EchoModel's answers over plain HTTP/1.1 keep-alive
// connections without net/http: the model process (ModelProcess) of the
// throughput benchmark. There net/http's server cost ~190 µs of CPU per
// answer on the same 2 cores as the daemon (a quarter of the machine),
// measuring itself more than the daemon. It reads what the daemon's client
// sends — a request line, headers, a Content-Length body — and answers with a
// Content-Length SSE body; anything else (a chunked body, no length, a bad
// line) gets 400 and the connection closed. GET /requests answers the count.
type rawEchoServer struct {
	ln       net.Listener
	requests atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
}

// maxRawRequest bounds a request body (the daemon's requests are a few KB).
const maxRawRequest = 8 << 20

func startRawEcho() (*rawEchoServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("raw echo model: %w", err)
	}
	s := &rawEchoServer{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// URL is the base URL up to /v1.
func (s *rawEchoServer) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops accepting, closes every connection and waits for their goroutines.
func (s *rawEchoServer) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

func (s *rawEchoServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *rawEchoServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReaderSize(c, 32<<10)
	var body, out bytes.Buffer
	for {
		req, err := readRawRequest(br, &body)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}
			return
		}
		out.Reset()
		s.answer(&out, req, body.Bytes())
		if _, err := c.Write(out.Bytes()); err != nil {
			return
		}
	}
}

type rawRequest struct{ method, path string }

// readRawRequest reads one request's line and headers, and its body into body.
func readRawRequest(br *bufio.Reader, body *bytes.Buffer) (rawRequest, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return rawRequest{}, err
	}
	f := bytes.Fields(line)
	if len(f) != 3 || !bytes.HasPrefix(f[2], []byte("HTTP/1.")) {
		return rawRequest{}, fmt.Errorf("bad request line %q", line)
	}
	req := rawRequest{method: string(f[0]), path: string(f[1])}
	length := -1
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return rawRequest{}, fmt.Errorf("headers: %w", err)
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return rawRequest{}, fmt.Errorf("bad header %q", h)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 || n > maxRawRequest {
				return rawRequest{}, fmt.Errorf("bad Content-Length %q", value)
			}
			length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return rawRequest{}, fmt.Errorf("transfer encoding %q not supported", value)
		}
	}
	if length < 0 {
		length = 0 // a GET
	}
	body.Reset()
	if _, err := io.CopyN(body, br, int64(length)); err != nil {
		return rawRequest{}, fmt.Errorf("body: %w", err)
	}
	return req, nil
}

// answer writes the whole response to req: EchoModel's stream, or the count.
func (s *rawEchoServer) answer(out *bytes.Buffer, req rawRequest, body []byte) {
	if req.method == "GET" && req.path == echoCountPath {
		n := strconv.AppendInt(nil, s.requests.Load(), 10)
		fmt.Fprintf(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(n), n)
		return
	}
	user, ok := lastUserText(body)
	if req.method != "POST" || !bytes.HasSuffix([]byte(req.path), []byte("/chat/completions")) || !ok {
		const msg = `{"error":{"message":"not a chat completion with a user message","type":"invalid_request_error"}}`
		fmt.Fprintf(out, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
		return
	}
	var stream bytes.Buffer
	writeEchoStream(&stream, s.requests.Add(1), "echo: "+stripRuntimeContext(user), len(body))
	fmt.Fprintf(out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nContent-Length: %d\r\n\r\n", stream.Len())
	out.Write(stream.Bytes())
}
