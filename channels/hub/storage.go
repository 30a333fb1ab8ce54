package hub

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/retry"
	"github.com/switchboard-bot/switchboard/memory"
)

// Storage failures (issue 13).
//
// A write to the durable store can fail for a while (the disk is full, a
// quota is hit, the file system went read-only or reports I/O errors:
// memory.IsStorageError). Such a failure is not the message's fault and not
// the model's: the handler then keeps the inbox item pending and retries the
// step that failed (the turn, the delivery of its answer or error notice, the
// clearing of the item) in the session's worker, with a doubling delay capped
// at StorageRetryMax (±20% jitter, internal/retry). Other sessions are not
// blocked; the session's order holds (later messages wait behind the retried
// one); Close and /stop end the wait. An item is cleared
// only after its answer or an error notice was delivered, so nothing is lost:
// once space comes back the pending items are answered without a restart,
// and after a restart Replay finds them in the inbox.
//
// The operator sees one ERROR log line when writes start failing and one INFO
// line when they succeed again (not one per retry), the optional
// StorageObserver (metrics), and Handler.StorageHealth (the daemon's /readyz).

// Default storage retry delays (HandlerOptions.StorageRetryBase / StorageRetryMax).
const (
	DefaultStorageRetryBase = 500 * time.Millisecond
	DefaultStorageRetryMax  = 30 * time.Second
)

// StorageObserver is implemented by an Observer that also tracks the store's
// health (the daemon's metrics). It is optional.
type StorageObserver interface {
	// StorageFailure counts a failed write (every attempt).
	StorageFailure(op string)
	// StorageHealthy reports the health state when it changes.
	StorageHealthy(ok bool)
}

// StorageHealth is the handler's view of the store's writes.
type StorageHealth struct {
	OK       bool
	Reason   string    // the failing kinds of writes and their last errors, while !OK
	Since    time.Time // when the current state began (zero: healthy since start)
	Failures uint64    // failed writes since start
}

// The kinds of store writes the handler does (metric labels, health reasons).
const (
	opAccept  = "accept message"
	opCommit  = "commit turn"
	opDeliver = "record delivery"
	opClear   = "clear inbox"
	opPairing = "save pairing request"
	opProbe   = "probe write"
)

// storageHealth tracks failure episodes: one log line when writes start
// failing and one when they work again. An episode ends when every kind of
// write that failed has succeeded again: a small write (a new message's
// Accept) that finds a free page on a full disk does not mean a turn commits.
type storageHealth struct {
	mu       sync.Mutex
	failing  map[string]string // op kind → last error
	since    time.Time
	failures uint64
}

func (h *Handler) storageFailed(op string, err error) {
	sh := &h.storage
	sh.mu.Lock()
	sh.failures++
	first := len(sh.failing) == 0
	if first {
		sh.failing, sh.since = map[string]string{}, h.now()
	}
	sh.failing[op] = err.Error()
	sh.mu.Unlock()
	if so, ok := h.obs.(StorageObserver); ok {
		so.StorageFailure(op)
		if first {
			so.StorageHealthy(false)
		}
	}
	if first {
		h.log.Error("storage writes are failing; unanswered messages stay pending and are retried until writes work again",
			"op", op, "err", err)
		return
	}
	h.log.Debug("storage write failed again", "op", op, "err", err)
}

// storageOK records that writes of kind op (and of the kinds in also) work.
func (h *Handler) storageOK(op string, also ...string) {
	sh := &h.storage
	sh.mu.Lock()
	if len(sh.failing) == 0 {
		sh.mu.Unlock()
		return
	}
	delete(sh.failing, op)
	for _, o := range also {
		delete(sh.failing, o)
	}
	if len(sh.failing) > 0 {
		sh.mu.Unlock()
		return
	}
	down := h.now().Sub(sh.since)
	failures := sh.failures
	sh.since = h.now()
	sh.mu.Unlock()
	if so, ok := h.obs.(StorageObserver); ok {
		so.StorageHealthy(true)
	}
	h.log.Info("storage writes work again; pending messages are being answered", "failing_for", down.Round(time.Millisecond),
		"failed_writes_total", failures)
}

// noteWrite records the outcome of a store write of kind op for the health signal.
func (h *Handler) noteWrite(op string, err error) {
	switch {
	case err == nil:
		h.storageOK(op)
	case memory.IsStorageError(err):
		h.storageFailed(op, err)
	}
}

// ProbeStorage tries a small write while writes are failing, so the health
// signal recovers even when no message is waiting (the daemon calls it
// periodically). A small write that works proves little for a turn's commit,
// so it ends only failures of small writes (accepting a message, the probe).
func (h *Handler) ProbeStorage(ctx context.Context) {
	if h.StorageHealth().OK {
		return
	}
	err := h.store.KVPut(ctx, kvStorageProbe, []byte(h.now().UTC().Format(time.RFC3339Nano)))
	switch {
	case err == nil:
		h.storageOK(opProbe, opAccept)
	case memory.IsStorageError(err):
		h.storageFailed(opProbe, err)
	}
}

// StorageHealth reports whether the store's writes work (the daemon's /readyz).
func (h *Handler) StorageHealth() StorageHealth {
	sh := &h.storage
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ops := make([]string, 0, len(sh.failing))
	for op, e := range sh.failing {
		ops = append(ops, op+": "+e)
	}
	sort.Strings(ops)
	return StorageHealth{OK: len(sh.failing) == 0, Reason: strings.Join(ops, "; "), Since: sh.since, Failures: sh.failures}
}

// storagePolicy is the wait between retries of a failed write: doubling
// from StorageRetryBase up to StorageRetryMax, jittered, until Close.
func (h *Handler) storagePolicy() retry.Policy {
	return retry.Policy{Initial: h.retryBase, Max: h.retryMax, Jitter: retry.DefaultJitter,
		Sleep: func(ctx context.Context, d time.Duration) error {
			if !h.retryWait(ctx, d) {
				return ErrClosed
			}
			return nil
		}}
}

// storageRetry runs op until it returns nil or an error that is not a
// storage failure; after a storage failure it waits (storagePolicy) and runs
// op again. It gives up, returning the last error, when ctx is done or the
// handler closes.
func (h *Handler) storageRetry(ctx context.Context, op string, fn func(context.Context) error) error {
	return retry.Do(ctx, h.storagePolicy(), func(ctx context.Context) error {
		err := fn(ctx)
		h.noteWrite(op, err)
		if err != nil && !memory.IsStorageError(err) {
			return retry.Permanent(err)
		}
		return err
	})
}

// retryWait sleeps d; false when ctx is done or the handler closes first.
func (h *Handler) retryWait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-h.quit:
		return false
	}
}

// kvStorageProbe is the KV key of the small write that tells whether the store
// writes again before a failed turn is run (and the model called) again.
const kvStorageProbe = "health/write-probe"

// awaitStorage waits before a turn whose commit failed on storage runs again:
// backoff's next wait first, then as long as a small probe write still
// fails, so the model is not called again and again while the disk is full.
// False when ctx is done or the handler closes.
func (h *Handler) awaitStorage(ctx context.Context, backoff *retry.Backoff) bool {
	for {
		if !h.retryWait(ctx, backoff.Next()) {
			return false
		}
		err := h.store.KVPut(ctx, kvStorageProbe, []byte(h.now().UTC().Format(time.RFC3339Nano)))
		if !memory.IsStorageError(err) {
			h.storageOK(opProbe)
			return ctx.Err() == nil
		}
		h.storageFailed(opProbe, err)
	}
}

// TurnCommitter is implemented by stores that can commit a turn themselves
// (memory.Store). When a turn ran but its commit failed on storage, the
// handler retries the commit with the turn's result instead of running the
// turn again, so the model is not asked twice and tools do not run twice.
type TurnCommitter interface {
	AppendTurn(ctx context.Context, key string, turn memory.Turn) error
}

// recommit commits res, the result of a turn whose own commit failed on
// storage, retrying with backoff. It reports false when it cannot (the store
// cannot commit turns, the turn produced nothing to store) or gave up (ctx
// done, the handler closing).
func (h *Handler) recommit(ctx context.Context, key, turnID string, batch []item, res agent.Result, held *turnCommit) bool {
	if held != nil && held.pending {
		return h.retryCommit(ctx, func(ctx context.Context) error { return held.recommit(ctx, key) }, turnID)
	}
	tc, ok := h.store.(TurnCommitter)
	if !ok || len(res.Messages) == 0 || res.FinishReason == agent.FinishCanceled {
		return false
	}
	ended := h.now()
	turn := memory.Turn{ID: turnID, Messages: res.Messages, Usage: res.Usage, Started: ended.Add(-res.Duration),
		Ended: ended, FinishReason: string(res.FinishReason), Answer: res.Text, Files: res.Files, FileLimits: res.FileLimits}
	if res.FinishReason != agent.FinishAPIError {
		turn.Sources = ids(batch) // as the agent does: a failed turn does not answer its messages
	}
	return h.retryCommit(ctx, func(ctx context.Context) error { return tc.AppendTurn(ctx, key, turn) }, turnID)
}

// retryCommit runs commit with backoff until it succeeds, fails for a reason
// other than storage, or ctx ends.
func (h *Handler) retryCommit(ctx context.Context, commit func(context.Context) error, turnID string) bool {
	backoff := h.storagePolicy().Backoff()
	for {
		if !h.retryWait(ctx, backoff.Next()) {
			return false
		}
		err := commit(ctx)
		if err == nil {
			h.storageOK(opCommit)
			return true
		}
		if !memory.IsStorageError(err) {
			h.log.Error("commit a turn after a storage failure", "turn", turnID, "err", err)
			return false
		}
		h.storageFailed(opCommit, err)
	}
}
