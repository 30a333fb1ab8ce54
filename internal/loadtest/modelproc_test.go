package loadtest

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// The throughput benchmark's model process answers the daemon like EchoModel:
// a chat's message is answered (the reply carries its token), the child counts
// the completion, and Stop reaps it.
func TestModelProcessAnswersTheDaemon(t *testing.T) {
	ctx := context.Background()
	mp, err := StartModelProcess(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := StartInprocModel(ctx, t.TempDir(), 4, mp, mp.URL, nil)
	if err != nil {
		mp.Close()
		t.Fatal(err)
	}
	defer ip.Stop()
	for i := range 3 {
		tok := Token(7, i)
		ch, err := ip.Chan.Say(ctx, 7, "hello "+tok, tok)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
		case <-time.After(time.Minute): // a hang detector
			t.Fatalf("no reply to %s", tok)
		}
		if ip.Chan.Sends(tok) != 1 {
			t.Fatalf("%s answered %d times", tok, ip.Chan.Sends(tok))
		}
	}
	if n := mp.RequestCount(); n != 3 {
		t.Fatalf("the model process answered %d completions, want 3", n)
	}
	ip.Stop()
	if mp.cmd.ProcessState == nil || !mp.cmd.ProcessState.Exited() {
		t.Fatalf("the model process was not reaped: %v", mp.cmd.ProcessState)
	}
}

// What the raw server does not speak gets 400 and a closed connection.
func TestRawEchoRefusesWhatItDoesNotSpeak(t *testing.T) {
	s, err := startRawEcho()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/v1")
	for _, req := range []string{
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
		"garbage\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", // no user message: 400, connection kept
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(time.Minute)) // a hang detector
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 400 ") {
			t.Errorf("%.40q: got %q %v, want 400", req, line, err)
		}
	}
}
