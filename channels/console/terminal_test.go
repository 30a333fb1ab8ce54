package console

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// failingReader returns its lines, then err.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// The end of the input is the Terminal's, not one Run's: EOF calls OnEOF
// and keeps Run up until shutdown; a read error ends every Run with it.
func TestTerminalInputEnd(t *testing.T) {
	broken := errors.New("device gone")
	for _, tt := range []struct {
		name    string
		in      io.Reader
		wantErr error
	}{
		{"EOF", strings.NewReader("hello\n"), nil},
		{"read error", &failingReader{r: strings.NewReader("hello\n"), err: broken}, broken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eof := make(chan struct{}, 4)
			got := make(chan string, 4)
			term := New(Options{In: tt.in, Out: io.Discard, OnEOF: func() { eof <- struct{}{} }})
			sink := channels.SinkFunc(func(_ context.Context, m channels.Message) error {
				got <- m.Text
				return nil
			})
			for run := 1; run <= 2; run++ {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- term.Run(ctx, sink) }()
				if run == 1 {
					if line := <-got; line != "hello" {
						t.Fatalf("the sink got %q, want hello", line)
					}
				}
				if tt.wantErr == nil {
					<-eof // OnEOF, and Run stays up
					cancel()
				}
				select {
				case err := <-done:
					if !errors.Is(err, tt.wantErr) {
						t.Errorf("Run %d returned %v, want %v", run, err, tt.wantErr)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("Run %d did not return", run)
				}
				cancel()
			}
		})
	}
}

// Issue 30: a message after a streamed line that broke off (the turn's
// error sentence) is shown on a line of its own; a streamed answer is not
// printed twice.
func TestTerminalMessageAfterBrokenStream(t *testing.T) {
	target := channels.Target{Channel: Name, ChatID: ChatID}
	for _, tt := range []struct {
		name   string
		deltas []string
		send   string
		want   string
	}{
		{"error after a partial answer", []string{"partial an"}, "I could not reach the model right now.", "partial an\nI could not reach the model right now.\n"},
		{"the streamed answer", []string{"the whole ", "answer"}, "the whole answer", "the whole answer\n"},
		{"nothing streamed", nil, "an answer", "an answer\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			term := New(Options{In: strings.NewReader(""), Out: &out})
			for _, d := range tt.deltas {
				term.WriteDelta(target, d)
			}
			if _, err := term.Send(context.Background(), channels.Outgoing{Target: target, Text: tt.send}); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Fatalf("the terminal shows %q, want %q", out.String(), tt.want)
			}
		})
	}
}
