package outbound

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
)

// streamMinChars is how much text a draft needs before it is first shown, so a
// reply does not start with a one-word message.
const streamMinChars = 24

// StreamFirstShow is how long an answer streams before its first draft or
// preview is shown (or the channel's edit interval, if shorter):
// channels.QuickAnswer. An answer complete by then is sent once, with no
// draft before it: one Bot API call instead of two or three, no message that
// flickers from draft to answer, and no draft counted against a group's rate
// limit. Text that starts over after a tool call (Reset) before any of the
// turn was shown waits its own StreamFirstShow, so an answer complete at
// once after a tool call is sent once too.
const StreamFirstShow = channels.QuickAnswer

// Streamer grows a draft reply on an Editor channel as text deltas arrive:
// the first chunk is sent once the answer has streamed for StreamFirstShow
// and has some text, then edited at most once per EditInterval; when the
// text outgrows one chunk the next chunk becomes a new message (rollover). Drafts are recorded in the outbox under the turn id, so
// the final delivery edits them into the formatted answer instead of sending
// the answer again. A turn that runs again after a crash adopts the drafts
// the killed run left (the outbox's delivered records for the turn and chat)
// and edits them, so the chat never keeps a fragment next to a new answer; a
// draft whose send has no receipt is looked up through a Verifier channel.
// Drafts are capped at the Outbound's MaxChunks; past that the streamer stops
// and the final delivery adds TruncatedNote. Stop ends the goroutine; it is
// idempotent. Outbound.Stream starts one.
//
// Where the channel can preview (channels.Previewer: Telegram's private
// chats), the streamer shows the chunk being written as an ephemeral preview
// instead, and sends nothing that stays: the answer is sent once, by the
// final delivery, so a crash mid-answer leaves no fragment in the chat. A
// turn whose earlier run left drafts, or a channel that turns out not to
// support previews (ErrNoPreviews), streams by edits.
type Streamer struct {
	out      *Outbound
	ch       channels.Channel
	ed       channels.Editor
	pv       channels.Previewer // nil: stream by edits
	d        Delivery
	interval time.Duration
	first    time.Duration // wait before the first draft
	after    func(time.Duration) <-chan time.Time

	mu     sync.Mutex
	text   []byte // appended to in place: a long answer arrives in many small deltas
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
	shown  string               // the preview shown last (preview mode)
}

// draft is one streamed message: its platform id and the text it shows.
type draft struct {
	id, shown string
}

// Stream starts streaming the answer of d (its Target, ReplyTo and TurnID;
// Markdown is unused) to ch, which must be a channels.Editor: ok is false,
// and nothing is started, for a channel that cannot edit. The caller feeds
// text deltas with Append, calls Stop when the turn ends and then delivers
// the answer with Deliver, which edits the drafts into it.
func (o *Outbound) Stream(ctx context.Context, ch channels.Channel, d Delivery) (s *Streamer, ok bool) {
	ed, ok := ch.(channels.Editor)
	if !ok {
		return nil, false
	}
	return startStreamer(ctx, o, ch, ed, d), true
}

func startStreamer(ctx context.Context, out *Outbound, ch channels.Channel, ed channels.Editor, d Delivery) *Streamer {
	s := &Streamer{out: out, ch: ch, ed: ed, d: d, interval: ed.EditInterval(), after: out.after,
		wake: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	if s.interval <= 0 {
		s.interval = time.Second
	}
	s.first = min(StreamFirstShow, s.interval)
	if pv, ok := ch.(channels.Previewer); ok && pv.Previews(d.Target) {
		s.pv = pv
	}
	go s.loop(ctx)
	return s
}

// Append adds streamed text.
func (s *Streamer) Append(delta string) {
	s.mu.Lock()
	s.text = append(s.text, delta...)
	s.dirty = true
	s.mu.Unlock()
	s.poke()
}

// poke wakes the loop.
func (s *Streamer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Reset discards text streamed so far (it preceded a tool call).
func (s *Streamer) Reset() {
	s.mu.Lock()
	s.text = s.text[:0]
	s.dirty = false
	s.resets++
	s.mu.Unlock()
}

// Stop ends streaming and waits for the goroutine; idempotent.
func (s *Streamer) Stop() {
	s.stopOnce.Do(func() { close(s.stopCh) })
	<-s.done
}

func (s *Streamer) loop(ctx context.Context) {
	defer close(s.done)
	s.adopt(ctx)
	var started, last time.Time // the current text's first wake; the last draft shown
	resets := 0
	startedAt := 0 // the Reset count the current text follows
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopCh:
			return
		case <-s.wake:
		}
		if last.IsZero() {
			s.mu.Lock()
			if s.resets != startedAt {
				// The text started over (a tool call) before any of it was
				// shown: the new text waits its own first show.
				started, startedAt = time.Time{}, s.resets
			}
			empty := len(s.text) == 0
			s.mu.Unlock()
			if empty {
				continue // woken by text a Reset discarded: the clock starts with the next
			}
		}
		var wait time.Duration
		switch {
		case started.IsZero():
			started, wait = time.Now(), s.first
		case last.IsZero():
			wait = s.first - time.Since(started)
		default:
			wait = s.interval - time.Since(last)
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.stopCh:
				return
			case <-s.after(wait):
			}
		}
		s.mu.Lock()
		if last.IsZero() && s.resets != startedAt {
			// Reset during the first-show wait: what is there now began
			// after it and waits afresh (the next turn of the loop).
			again := s.dirty
			s.mu.Unlock()
			if again {
				s.poke()
			}
			continue
		}
		dirty := s.dirty
		s.dirty = false
		if s.resets != resets {
			resets, s.full = s.resets, false // text after a tool call starts over
		}
		var text string
		if dirty && !s.full && utf8.RuneCount(s.text) >= streamMinChars {
			text = string(s.text)
		}
		s.mu.Unlock()
		if text == "" {
			continue
		}
		s.render(ctx, text)
		last = time.Now()
	}
}

// adopt loads the drafts an earlier run of the turn left in this chat.
func (s *Streamer) adopt(ctx context.Context) {
	s.drafts = map[int]draft{}
	state, err := s.out.turnState(ctx, s.d)
	if err != nil {
		s.out.log.Warn("stream: could not read the turn's earlier drafts", "turn", s.d.TurnID, "err", err)
		return
	}
	s.prior = state
	if len(state) > 0 {
		s.pv = nil // an earlier run's drafts are edited into the answer
	}
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

func (s *Streamer) render(ctx context.Context, text string) {
	chunks := s.ch.Format(text)
	if max := s.out.MaxChunks(); len(chunks) > max {
		chunks = chunks[:max]
		s.full = true // the final delivery cuts the answer and adds the note
	}
	if s.pv != nil {
		if s.preview(ctx, chunks) {
			return
		}
		s.pv = nil // not supported after all: stream by edits from here
	}
	for i, c := range chunks {
		dr, ok := s.drafts[i]
		if !ok {
			if cr := s.prior[i]; cr.unconfirmed() {
				// The killed run's send of this draft has no receipt.
				if id, found := s.out.verify(ctx, s.ch, s.d, i, c, cr.last); found {
					dr, ok = draft{id: id, shown: cr.last.Text}, true
					s.drafts[i] = dr
				} else {
					s.out.countResend(s.d, i, "draft")
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

// preview shows the chunk being written (the last one) as a preview; each
// chunk is its own preview. It reports false when the channel does not
// support previews after all. Other failures are logged and skipped: a
// preview is a courtesy, the answer is sent anyway.
func (s *Streamer) preview(ctx context.Context, chunks []channels.Chunk) bool {
	if len(chunks) == 0 {
		return true
	}
	i := len(chunks) - 1
	text := chunks[i].Text
	if text == s.shown {
		return true
	}
	err := s.pv.Preview(ctx, s.d.Target, previewID(s.d.TurnID, i), text)
	switch {
	case errors.Is(err, channels.ErrNoPreviews):
		return false
	case err != nil:
		s.out.log.Debug("stream preview failed", "target", s.d.Target.String(), "err", err)
	default:
		s.shown = text
	}
	return true
}

// previewID is the preview id of chunk i of a turn's answer: non-zero,
// stable for the turn, different for each chunk.
func previewID(turnID string, i int) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(turnID))
	return int64(h.Sum32()>>1)<<6 + int64(i%64) + 1
}

// Quiet stops the streamer (Stop) and reports whether it neither sent a
// draft nor found records of an earlier run of the turn: nothing of the
// answer can be on the platform yet (previews are not messages).
func (s *Streamer) Quiet() bool {
	s.Stop()
	return len(s.drafts) == 0 && len(s.prior) == 0
}
