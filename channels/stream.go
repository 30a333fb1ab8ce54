package channels

import (
	"context"
	"sync"
	"time"
)

// streamMinChars is how much text a draft needs before it is first shown, so a
// reply does not start with a one-word message.
const streamMinChars = 24

// streamer grows a draft reply on an Editor channel as text deltas arrive:
// the first chunk is sent once some text exists, then edited at most once per
// EditInterval; when the text outgrows one chunk the next chunk becomes a new
// message (rollover). Drafts are recorded in the outbox under the turn id, so
// the final delivery edits them into the formatted answer instead of sending
// the answer again. Stop ends the goroutine; it is idempotent.
type streamer struct {
	out      *Outbound
	ch       Channel
	ed       Editor
	d        Delivery
	interval time.Duration

	mu    sync.Mutex
	text  string
	dirty bool

	wake     chan struct{}
	stopCh   chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// owned by the loop goroutine
	shown []string // text shown per draft message
	ids   []string
}

func startStreamer(ctx context.Context, out *Outbound, ch Channel, ed Editor, d Delivery) *streamer {
	s := &streamer{out: out, ch: ch, ed: ed, d: d, interval: ed.EditInterval(),
		wake: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	if s.interval <= 0 {
		s.interval = time.Second
	}
	go s.loop(ctx)
	return s
}

// Append adds streamed text.
func (s *streamer) Append(delta string) {
	s.mu.Lock()
	s.text += delta
	s.dirty = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Reset discards text streamed so far (it preceded a tool call).
func (s *streamer) Reset() {
	s.mu.Lock()
	s.text = ""
	s.dirty = false
	s.mu.Unlock()
}

// Stop ends streaming and waits for the goroutine; idempotent.
func (s *streamer) Stop() {
	s.stopOnce.Do(func() { close(s.stopCh) })
	<-s.done
}

func (s *streamer) loop(ctx context.Context) {
	defer close(s.done)
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopCh:
			return
		case <-s.wake:
		}
		if wait := s.interval - time.Since(last); !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-s.stopCh:
				t.Stop()
				return
			case <-t.C:
			}
		}
		s.mu.Lock()
		text, dirty := s.text, s.dirty
		s.dirty = false
		s.mu.Unlock()
		if !dirty || len([]rune(text)) < streamMinChars {
			continue
		}
		s.render(ctx, text)
		last = time.Now()
	}
}

func (s *streamer) render(ctx context.Context, text string) {
	chunks := s.ch.Format(text)
	for i, c := range chunks {
		if i < len(s.ids) {
			if s.shown[i] == c.Text {
				continue
			}
			if err := s.ed.Edit(ctx, s.d.Target, s.ids[i], c.Text); err != nil {
				s.out.log.Debug("stream edit failed", "target", s.d.Target.String(), "err", err)
				return
			}
			s.shown[i] = c.Text
			continue
		}
		id, err := s.out.send(ctx, s.ch, s.d, i, c)
		if err != nil {
			s.out.log.Debug("stream send failed", "target", s.d.Target.String(), "err", err)
			return
		}
		s.ids = append(s.ids, id)
		s.shown = append(s.shown, c.Text)
	}
}
