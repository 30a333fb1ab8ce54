// Package console is the terminal channel (a line in, the answer streamed
// out) and Memory, an in-memory channel that tests use to drive the whole
// handler exactly as a platform adapter would.
//
// The terminal writes through a Screen, which keeps the daemon's log lines
// (stderr) from tearing an answer line (stdout) when both reach one terminal;
// with stdin a terminal it shows a "> " prompt. `switchboard chat` against a
// running daemon is a console chat too: the daemon's admin API attaches a
// Listener to a console chat (Terminal.Attach) and streams what the console
// would print to the client. A headless Terminal (no local input) serves
// those chats when the daemon's own console is disabled.
//
// Files: terminal.go (Terminal, the console channel), memory.go (Memory, the
// in-memory channel of tests), screen.go (Screen). The package imports only
// channels and channels/markup of the project.
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
const Name = "console"

// ChatID is the console's single chat.
const ChatID = "local"

// Terminal reads lines from In and writes answers to Out.
type Terminal struct {
	in       io.Reader
	out      *Screen
	user     string
	prompt   bool
	headless bool
	onEOF    func()

	// One reader of In for the Terminal's life, whichever Run takes its
	// lines: a Run restarted by the supervisor must not leave the last
	// Run's reader to take (and drop) the next line.
	readOnce sync.Once
	lines    chan string   // lines read, each taken by the active Run
	ended    chan struct{} // closed when input ended; endErr is set then
	endErr   error         // nil: EOF

	mu       sync.Mutex
	streamed map[string]string // target → the text streamed since the last Send
	seq      int
	epoch    int64
	attached map[string]Listener // chat id → remote client (Attach)
}

var (
	_ channels.Channel     = (*Terminal)(nil)
	_ channels.DeltaWriter = (*Terminal)(nil)
)

// Options configures a Terminal.
type Options struct {
	In     io.Reader // default os.Stdin
	Out    io.Writer // default os.Stdout
	User   string    // sender name; default $USER or "operator"
	Prompt bool      // print "> " before reading
	// OnEOF, if set, is called when input ends (switchboard chat quits then).
	OnEOF func()
	// Screen, if set, is where answers go (Out is then ignored); share it
	// with the logger (Screen.Logs) so log lines never tear an answer.
	Screen *Screen
	// Headless reads no input and prints nothing of its own: the terminal
	// only serves chats attached through the admin API (Attach).
	Headless bool
}

// Listener receives what the console would print in one chat.
type Listener interface {
	Delta(text string) // streamed answer text
	Reset()            // the streamed text was not the answer
	Text(text string)  // a message (an answer, a command's reply)
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
	if o.Screen == nil {
		o.Screen = NewScreen(o.Out, false)
	}
	if o.Headless {
		o.Screen, o.Prompt = NewScreen(io.Discard, false), false
	}
	return &Terminal{in: o.In, out: o.Screen, user: o.User, prompt: o.Prompt, headless: o.Headless, onEOF: o.OnEOF,
		streamed: map[string]string{}, epoch: time.Now().UnixNano(), attached: map[string]Listener{}}
}

// Name implements channels.Channel.
func (t *Terminal) Name() string { return Name }

// Run reads lines until ctx is done or input ends (EOF returns nil). Run
// may be called again after it returned: the next Run goes on with the
// next line.
func (t *Terminal) Run(ctx context.Context, sink channels.Sink) error {
	if t.headless {
		<-ctx.Done()
		return nil
	}
	t.readOnce.Do(t.startReading)
	t.showPrompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.ended:
			if t.endErr != nil {
				return fmt.Errorf("console: read input: %w", t.endErr)
			}
			if t.onEOF != nil {
				t.onEOF()
			}
			<-ctx.Done() // input closed: keep the channel up until shutdown
			return nil
		case line := <-t.lines:
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

// startReading starts the Terminal's one reader of In. It hands each line
// to the active Run (waiting for one while none runs) and ends with the
// input; stdin cannot be interrupted portably, so it is not stopped.
func (t *Terminal) startReading() {
	t.lines = make(chan string)
	t.ended = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(t.in)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			t.lines <- sc.Text()
		}
		t.endErr = sc.Err()
		close(t.ended)
	}()
}

func (t *Terminal) showPrompt() {
	if t.prompt {
		t.out.Prompt("> ")
	}
}

// Attach sends what the console would print in chat id to l until the
// returned detach is called (the admin API's remote chats). One listener per
// chat: a second Attach of the same id replaces the first.
func (t *Terminal) Attach(id string, l Listener) (detach func()) {
	t.mu.Lock()
	t.attached[id] = l
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		if t.attached[id] == l {
			delete(t.attached, id)
		}
		t.mu.Unlock()
	}
}

// Chat sends a line into chat id as the console user would type it (the
// admin API's remote chats); the answer goes to the chat's Listener.
func (t *Terminal) Chat(ctx context.Context, sink channels.Sink, id, user, line string) error {
	if user == "" {
		user = t.user
	}
	t.mu.Lock()
	t.seq++
	mid := strconv.FormatInt(t.epoch, 36) + "-r" + strconv.Itoa(t.seq)
	t.mu.Unlock()
	return sink.Handle(ctx, channels.Message{Channel: Name, ChatID: id, MessageID: mid, Direct: true,
		Sender: channels.Sender{ID: user, Name: user}, Text: line, Time: time.Now()})
}

// Send prints a chunk; if its text was already streamed, it ends the line.
func (t *Terminal) Send(_ context.Context, out channels.Outgoing) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := out.Target.String()
	if l := t.attached[out.Target.ChatID]; l != nil {
		delete(t.streamed, key)
		l.Text(out.Text)
		t.seq++
		return "out-" + strconv.Itoa(t.seq), nil
	}
	streamed, ok := t.streamed[key]
	delete(t.streamed, key)
	if ok {
		fmt.Fprint(t.out, "\n") // end the streamed line
	}
	// The streamed text was this message: it is shown already. Anything
	// else (the error sentence of a turn whose stream broke off) is printed.
	if !ok || strings.TrimSpace(streamed) != strings.TrimSpace(out.Text) {
		fmt.Fprintf(t.out, "%s\n", out.Text)
	}
	t.seq++
	t.showPrompt()
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
	if l := t.attached[target.ChatID]; l != nil {
		l.Delta(text)
		return
	}
	t.streamed[target.String()] += text
	fmt.Fprint(t.out, text)
}

// ResetDelta ends a streamed line that turned out not to be the answer.
func (t *Terminal) ResetDelta(target channels.Target) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.attached[target.ChatID]; l != nil {
		l.Reset()
		return
	}
	if _, ok := t.streamed[target.String()]; ok {
		delete(t.streamed, target.String())
		fmt.Fprint(t.out, "\n")
	}
}
