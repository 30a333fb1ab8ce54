package hub

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// streamMinChars is how much text a draft needs before it is first shown, so a
// reply does not start with a one-word message.
const streamMinChars = 24

// streamer grows a draft reply on an Editor channel as text deltas arrive:
// the first chunk is sent once some text exists, then edited at most once per
// EditInterval; when the text outgrows one chunk the next chunk becomes a new
// message (rollover). Drafts are recorded in the outbox under the turn id, so
// the final delivery edits them into the formatted answer instead of sending
// the answer again. A turn that runs again after a crash adopts the drafts
// the killed run left (the outbox's delivered records for the turn and chat)
// and edits them, so the chat never keeps a fragment next to a new answer; a
// draft whose send has no receipt is looked up through a Verifier channel.
// Drafts are capped at the Outbound's MaxChunks; past that the streamer stops
// and the final delivery adds TruncatedNote. Stop ends the goroutine; it is
// idempotent.
type streamer struct {
	out      *Outbound
	ch       channels.Channel
	ed       channels.Editor
	d        Delivery
	interval time.Duration

	mu     sync.Mutex
	text   string
	dirty  bool
	resets int // Reset calls, so the loop notices a new text after a full one

	wake     chan struct{}
	stopCh   chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// owned by the loop goroutine
	drafts map[int]draft        // chunk index → message shown
	prior  map[int]chunkRecords // the outbox's records of the turn at start
	full   bool                 // the text outgrew the chunk cap: no more renders
}

// draft is one streamed message: its platform id and the text it shows.
type draft struct {
	id, shown string
}

func startStreamer(ctx context.Context, out *Outbound, ch channels.Channel, ed channels.Editor, d Delivery) *streamer {
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
	s.resets++
	s.mu.Unlock()
}

// Stop ends streaming and waits for the goroutine; idempotent.
func (s *streamer) Stop() {
	s.stopOnce.Do(func() { close(s.stopCh) })
	<-s.done
}

func (s *streamer) loop(ctx context.Context) {
	defer close(s.done)
	s.adopt(ctx)
	var last time.Time
	resets := 0
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
		if s.resets != resets {
			resets, s.full = s.resets, false // text after a tool call starts over
		}
		s.mu.Unlock()
		if !dirty || s.full || len([]rune(text)) < streamMinChars {
			continue
		}
		s.render(ctx, text)
		last = time.Now()
	}
}

// adopt loads the drafts an earlier run of the turn left in this chat.
func (s *streamer) adopt(ctx context.Context) {
	s.drafts = map[int]draft{}
	state, err := s.out.turnState(ctx, s.d)
	if err != nil {
		s.out.log.Warn("stream: could not read the turn's earlier drafts", "turn", s.d.TurnID, "err", err)
		return
	}
	s.prior = state
	for i, cr := range state {
		if cr.hasMsg {
			// The killed run may have edited the draft past the recorded
			// text (edits are not recorded): treat what it shows as unknown.
			s.drafts[i] = draft{id: cr.msg.PlatformID}
		}
	}
	if len(s.drafts) > 0 {
		s.out.log.Info("stream: continuing the drafts of an earlier run of the turn", "target", s.d.Target.String(),
			"turn", s.d.TurnID, "drafts", len(s.drafts))
	}
}

func (s *streamer) render(ctx context.Context, text string) {
	chunks := s.ch.Format(text)
	if max := s.out.MaxChunks(); len(chunks) > max {
		chunks = chunks[:max]
		s.full = true // the final delivery cuts the answer and adds the note
	}
	for i, c := range chunks {
		dr, ok := s.drafts[i]
		if !ok {
			if cr := s.prior[i]; cr.unconfirmed() {
				// The killed run's send of this draft has no receipt.
				if id, found := s.out.verify(ctx, s.ch, s.d, i, c, cr.last); found {
					dr, ok = draft{id: id, shown: cr.last.Text}, true
					s.drafts[i] = dr
				}
				delete(s.prior, i)
			}
		}
		if ok {
			if dr.shown == c.Text {
				continue
			}
			if err := s.ed.Edit(ctx, s.d.Target, dr.id, c.Text); err != nil {
				s.out.log.Debug("stream edit failed", "target", s.d.Target.String(), "err", err)
				return
			}
			dr.shown = c.Text
			s.drafts[i] = dr
			continue
		}
		id, err := s.out.send(ctx, s.ch, s.d, i, c)
		if err != nil {
			s.out.log.Debug("stream send failed", "target", s.d.Target.String(), "err", err)
			return
		}
		s.drafts[i] = draft{id: id, shown: c.Text}
	}
}

// quiet reports, after Stop, whether the streamer neither sent a draft nor
// found records of an earlier run of the turn.
func (s *streamer) quiet() bool {
	return len(s.drafts) == 0 && len(s.prior) == 0
}
