package agent

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/switchboard-bot/switchboard/memory"
)

// MemorySessions is an in-memory Sessions (tests, `switchboard ask` without a
// data dir). Safe for concurrent use.
type MemorySessions struct {
	mu    sync.Mutex
	hist  map[string][]memory.Message
	turns map[string][]memory.Turn
}

// NewMemorySessions returns an empty in-memory session store.
func NewMemorySessions() *MemorySessions {
	return &MemorySessions{hist: map[string][]memory.Message{}, turns: map[string][]memory.Turn{}}
}

// LoadHistory returns the last limit messages of the session (all if limit <= 0).
func (m *MemorySessions) LoadHistory(ctx context.Context, key string, limit int) ([]memory.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.hist[key]
	if limit > 0 && len(h) > limit {
		h = h[len(h)-limit:]
	}
	return append([]memory.Message(nil), h...), nil
}

// AppendTurn appends the turn's messages to the session.
func (m *MemorySessions) AppendTurn(ctx context.Context, key string, turn memory.Turn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hist[key] = append(m.hist[key], turn.Messages...)
	turn.Messages = append([]memory.Message(nil), turn.Messages...)
	m.turns[key] = append(m.turns[key], turn)
	return nil
}

// Turns returns the committed turns of a session (for assertions).
func (m *MemorySessions) Turns(key string) []memory.Turn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]memory.Turn(nil), m.turns[key]...)
}

// keyedMutex is a per-key lock whose Lock honours the context. Entries are
// removed when nobody holds or waits for them.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	ch   chan struct{} // capacity 1: holding = a token in the channel
	refs int
}

// keyHold is one holder's claim on a key's lock; its unlock is idempotent.
type keyHold struct {
	k    *keyedMutex
	l    *keyLock
	key  string
	done atomic.Bool
}

// Lock takes the lock of key; it returns an unlock function (idempotent).
func (k *keyedMutex) Lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()

	h := &keyHold{k: k, l: l, key: key}
	select {
	case l.ch <- struct{}{}:
	case <-ctx.Done():
		h.release()
		return nil, ctx.Err()
	}
	return h.unlock, nil
}

func (h *keyHold) unlock() {
	if h.done.CompareAndSwap(false, true) {
		<-h.l.ch
		h.release()
	}
}

// release drops the holder's reference; the entry goes with the last one.
func (h *keyHold) release() {
	k := h.k
	k.mu.Lock()
	h.l.refs--
	if h.l.refs == 0 {
		delete(k.locks, h.key)
	}
	k.mu.Unlock()
}
