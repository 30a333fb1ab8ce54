// Package console is the terminal channel (a line in, the answer streamed
// out) and Memory, an in-memory channel that tests use to drive the whole
// handler exactly as a platform adapter would.
package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/markup"
)

// Name is the console channel's address prefix; its one chat is "console:local".
const Name = channels.ConsoleChannel

// ChatID is the console's single chat.
const ChatID = "local"

// Terminal reads lines from In and writes answers to Out.
type Terminal struct {
	in     io.Reader
	out    io.Writer
	user   string
	prompt bool
	onEOF  func()

	mu       sync.Mutex
	streamed map[string]bool // target → deltas shown since the last Send
	seq      int
	epoch    int64
}

// Options configures a Terminal.
type Options struct {
	In     io.Reader // default os.Stdin
	Out    io.Writer // default os.Stdout
	User   string    // sender name; default $USER or "operator"
	Prompt bool      // print "> " before reading
	// OnEOF, if set, is called when input ends (switchboard chat quits then).
	OnEOF func()
}

// New returns a terminal channel.
func New(o Options) *Terminal {
	if o.In == nil {
		o.In = os.Stdin
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.User == "" {
		o.User = os.Getenv("USER")
	}
	if o.User == "" {
		o.User = "operator"
	}
	return &Terminal{in: o.In, out: o.Out, user: o.User, prompt: o.Prompt, onEOF: o.OnEOF, streamed: map[string]bool{},
		epoch: time.Now().UnixNano()}
}

// Name implements channels.Channel.
func (t *Terminal) Name() string { return Name }

// Run reads lines until ctx is done or input ends (EOF returns nil).
func (t *Terminal) Run(ctx context.Context, sink channels.Sink) error {
	lines := make(chan string)
	errc := make(chan error, 1)
	go func() { // ends when input ends; stdin cannot be interrupted portably
		sc := bufio.NewScanner(t.in)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		errc <- sc.Err()
	}()
	t.showPrompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if err != nil {
				return fmt.Errorf("console: read input: %w", err)
			}
			if t.onEOF != nil {
				t.onEOF()
			}
			<-ctx.Done() // input closed: keep the channel up until shutdown
			return nil
		case line := <-lines:
			line = strings.TrimSpace(line)
			if line == "" {
				t.showPrompt()
				continue
			}
			t.mu.Lock()
			t.seq++
			id := strconv.FormatInt(t.epoch, 36) + "-" + strconv.Itoa(t.seq)
			t.mu.Unlock()
			msg := channels.Message{Channel: Name, ChatID: ChatID, MessageID: id, Direct: true,
				Sender: channels.Sender{ID: t.user, Name: t.user}, Text: line, Time: time.Now()}
			if err := sink.Handle(ctx, msg); err != nil {
				fmt.Fprintf(t.out, "! not accepted: %v\n", err)
				t.showPrompt()
			}
		}
	}
}

func (t *Terminal) showPrompt() {
	if t.prompt {
		fmt.Fprint(t.out, "> ")
	}
}

// Send prints a chunk; if its text was already streamed, it ends the line.
func (t *Terminal) Send(_ context.Context, out channels.Outgoing) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := out.Target.String()
	if t.streamed[key] {
		delete(t.streamed, key)
		fmt.Fprint(t.out, "\n")
	} else {
		fmt.Fprintf(t.out, "%s\n", out.Text)
	}
	t.seq++
	if t.prompt {
		fmt.Fprint(t.out, "> ")
	}
	return "out-" + strconv.Itoa(t.seq), nil
}

// Format keeps Markdown as is (a terminal shows it fine) in large chunks.
func (t *Terminal) Format(md string) []channels.Chunk {
	var out []channels.Chunk
	for _, s := range markup.Split(md, 100000) {
		out = append(out, channels.Chunk{Text: s, Plain: s})
	}
	return out
}

// WriteDelta prints streamed text as it arrives.
func (t *Terminal) WriteDelta(target channels.Target, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.streamed[target.String()] = true
	fmt.Fprint(t.out, text)
}

// ResetDelta ends a streamed line that turned out not to be the answer.
func (t *Terminal) ResetDelta(target channels.Target) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.streamed[target.String()] {
		delete(t.streamed, target.String())
		fmt.Fprint(t.out, "\n")
	}
}
