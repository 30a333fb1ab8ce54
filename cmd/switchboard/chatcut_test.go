package main

// Issue 30 part 1, item 4: in `switchboard chat` through the daemon, what is
// printed after a streamed answer broke off — the turn's error sentence, the
// CLI's own error when the daemon's answer stops short — starts on a line of
// its own and is shown, never glued to (or swallowed by) the partial text.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestChatLinesAfterACutStream(t *testing.T) {
	const errSentence = "I could not reach the model right now; please try again in a minute."
	for _, tt := range []struct {
		name   string
		events string // the daemon's ndjson answer
		want   []string
	}{
		{"the daemon's answer stops mid-stream",
			`{"delta":"partial an"}` + "\n",
			[]string{"partial an", "switchboard: the daemon ended the chat before the answer was complete (is it shutting down?)"}},
		{"the daemon's answer breaks mid-event",
			`{"delta":"partial an"}` + "\n" + `{"del`,
			[]string{"partial an", "switchboard: read the daemon's answer: unexpected EOF"}},
		{"the turn failed after streaming part of an answer",
			`{"delta":"partial an"}` + "\n" + `{"text":"` + errSentence + `"}` + "\n" + `{"done":true}` + "\n",
			[]string{"partial an", errSentence}},
		{"a streamed answer is not repeated",
			`{"delta":"the whole "}` + "\n" + `{"delta":"answer"}` + "\n" + `{"text":"the whole answer"}` + "\n" + `{"done":true}` + "\n",
			[]string{"the whole answer"}},
		{"a retried stream starts a new line",
			`{"delta":"partial"}` + "\n" + `{"reset":true}` + "\n" + `{"delta":"answer"}` + "\n" + `{"text":"answer"}` + "\n" + `{"done":true}` + "\n",
			[]string{"partial", "answer"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				_, _ = io.WriteString(w, tt.events)
			}))
			defer srv.Close()
			var both strings.Builder // stdout and stderr in one stream, as a terminal shows them
			a := &app{stdout: &both, stderr: &both}
			err := a.remoteLine(context.Background(), &daemonClient{base: srv.URL, http: srv.Client()}, "hello")
			if err != nil {
				fmt.Fprintf(a.stderr, "switchboard: %v\n", err) // as main prints a command's error
			}
			got := strings.Split(strings.TrimSuffix(both.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("the terminal shows\n%s\nwant\n%s", both.String(), strings.Join(tt.want, "\n"))
			}
		})
	}
}
