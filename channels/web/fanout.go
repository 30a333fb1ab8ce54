package web

import "sync"

// conv is the kept history of one conversation: the bot's messages with
// their current text, and the operator's posted messages, oldest first.
type conv struct {
	msgs  []Event
	posts []Event // KindPost
	last  int64   // Adapter.tick of the last message, edit or post
}

// Subscribe streams the events of conversation conv until cancel is called
// or the adapter stops; the channel is closed then. cancel is idempotent.
// A slow subscriber loses deltas, never messages, edits, resets or typing
// changes (see the package doc); one that falls hopelessly behind is
// closed, and should reload History. Subscribing to an invalid id or after
// Stop returns a closed channel.
func (a *Adapter) Subscribe(conv string) (events <-chan Event, cancel func()) {
	s := newSubscriber(a.opts.QueueSize)
	a.mu.Lock()
	if a.stopped || CheckConv(conv) != nil {
		a.mu.Unlock()
		s.close()
		return s.out, func() {}
	}
	set := a.subs[conv]
	if set == nil {
		set = map[*subscriber]struct{}{}
		a.subs[conv] = set
	}
	set[s] = struct{}{}
	a.mu.Unlock()
	return s.out, func() {
		a.unsubscribe(conv, s)
		s.close()
	}
}

func (a *Adapter) unsubscribe(conv string, s *subscriber) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if set := a.subs[conv]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(a.subs, conv)
		}
	}
}

// History returns the bot's messages in conv kept so far by this process,
// oldest first, each with its current text (Kind "message").
func (a *Adapter) History(conv string) []Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.convs[conv]
	if c == nil {
		return nil
	}
	return append([]Event(nil), c.msgs...)
}

// Posts returns the operator's messages posted to conv in this process
// (Kind KindPost, From the sender's name), oldest first, at most MaxHistory.
// A console shows them until the stored turn that answers them is there:
// while a turn waits (for an approval, a slow model) the turn is not stored
// yet, and a page reloaded then must still show what the operator said.
func (a *Adapter) Posts(conv string) []Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.convs[conv]
	if c == nil {
		return nil
	}
	return append([]Event(nil), c.posts...)
}

// record appends a sent message to conv's history, forgetting the oldest
// message and the least recently active conversation past the bounds.
// Called with a.mu held.
func (a *Adapter) record(id string, ev Event) {
	c := a.touch(id)
	c.msgs = keepLast(append(c.msgs, ev), a.opts.MaxHistory)
}

// recordPost appends the operator's message ev to conv's posts, within the
// same bounds as record.
func (a *Adapter) recordPost(id string, ev Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.touch(id)
	c.posts = keepLast(append(c.posts, ev), a.opts.MaxHistory)
}

// touch returns conv id's history (made, evicting the least recently active
// conversation past MaxConversations) and marks it active. Called with a.mu
// held.
func (a *Adapter) touch(id string) *conv {
	a.tick++
	c := a.convs[id]
	if c == nil {
		if len(a.convs) >= a.opts.MaxConversations {
			a.evictOldest()
		}
		c = &conv{}
		a.convs[id] = c
	}
	c.last = a.tick
	return c
}

// keepLast drops the oldest events of list past n.
func keepLast(list []Event, n int) []Event {
	if over := len(list) - n; over > 0 {
		list = append(list[:0], list[over:]...)
	}
	return list
}

// evictOldest forgets the least recently active conversation. Called with
// a.mu held.
func (a *Adapter) evictOldest() {
	oldest, at := "", int64(-1)
	for id, c := range a.convs {
		if at < 0 || c.last < at {
			oldest, at = id, c.last
		}
	}
	delete(a.convs, oldest)
}

// applyEdit replaces the text of message msgID in conv's history; found
// reports whether it was there. Called with a.mu held.
func (a *Adapter) applyEdit(id, msgID string, ev Event) (found bool) {
	c := a.convs[id]
	if c == nil {
		return false
	}
	for i := len(c.msgs) - 1; i >= 0; i-- {
		if c.msgs[i].ID == msgID {
			a.tick++
			c.last = a.tick
			c.msgs[i].Text, c.msgs[i].Live = ev.Text, ev.Live
			return true
		}
	}
	return false
}

// publish queues ev for every subscriber of conv; a subscriber that fell
// hopelessly behind is closed. Called with a.mu held; returns the
// subscribers to close once it is released.
func (a *Adapter) publish(conv string, ev Event) (overflowed []*subscriber) {
	for s := range a.subs[conv] {
		if !s.push(ev) {
			delete(a.subs[conv], s)
			overflowed = append(overflowed, s)
		}
	}
	if len(a.subs[conv]) == 0 {
		delete(a.subs, conv)
	}
	return overflowed
}

// emit records nothing: it publishes ev to conv's subscribers and closes
// those that overflowed.
func (a *Adapter) emit(conv string, ev Event) {
	a.mu.Lock()
	over := a.publish(conv, ev)
	a.mu.Unlock()
	a.closeAll(over)
}

func (a *Adapter) closeAll(subs []*subscriber) {
	for _, s := range subs {
		a.log.Warn("a web console view fell too far behind and was disconnected; it reloads the history")
		s.close()
	}
}

// subscriber is one live view: a queue filled by publish and a pump
// goroutine that moves it to out. The pump is the subscriber's own; close
// ends it and waits for it, and it closes out.
type subscriber struct {
	out   chan Event
	limit int

	mu    sync.Mutex
	queue []Event
	lossy bool // a delta was dropped: drop deltas until the next other event

	wake     chan struct{}
	done     chan struct{}
	finished chan struct{}
	once     sync.Once
}

func newSubscriber(limit int) *subscriber {
	s := &subscriber{out: make(chan Event), limit: limit, wake: make(chan struct{}, 1),
		done: make(chan struct{}), finished: make(chan struct{})}
	go s.pump()
	return s
}

// push queues ev; false means the queue overflowed and the subscriber must
// be closed.
func (s *subscriber) push(ev Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Kind {
	case KindDelta:
		if s.lossy || len(s.queue) >= s.limit {
			s.lossy = true
			return true
		}
	case KindEdit:
		s.lossy = false
		if s.coalesce(ev, KindMessage, KindEdit) {
			return true
		}
	case KindTyping:
		// Only into a typing change queued last: "off" must not overtake
		// the drafts queued before it.
		if n := len(s.queue); n > 0 && s.queue[n-1].Kind == KindTyping {
			s.queue[n-1] = ev
			return true
		}
	default:
		s.lossy = false
	}
	if len(s.queue) >= 4*s.limit {
		return false
	}
	s.queue = append(s.queue, ev)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// coalesce replaces the text of a queued event of one of kinds (for the
// same message id) with ev's, so a queue holds one pending state per
// message.
func (s *subscriber) coalesce(ev Event, kinds ...string) bool {
	for i := len(s.queue) - 1; i >= 0; i-- {
		q := &s.queue[i]
		if q.ID != ev.ID {
			continue
		}
		for _, k := range kinds {
			if q.Kind == k {
				q.Text, q.Time, q.Live = ev.Text, ev.Time, ev.Live
				return true
			}
		}
	}
	return false
}

func (s *subscriber) pop() (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return Event{}, false
	}
	ev := s.queue[0]
	s.queue[0] = Event{}
	s.queue = s.queue[1:]
	if len(s.queue) == 0 {
		s.queue = nil // let the backing array go
	}
	return ev, true
}

func (s *subscriber) pump() {
	defer close(s.finished)
	defer close(s.out)
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		for {
			ev, ok := s.pop()
			if !ok {
				break
			}
			select {
			case s.out <- ev:
			case <-s.done:
				return
			}
		}
	}
}

// close ends the pump and waits for it; idempotent.
func (s *subscriber) close() {
	s.once.Do(func() { close(s.done) })
	<-s.finished
}
