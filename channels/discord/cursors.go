package discord

import (
	"context"
	"encoding/json"
	"sort"
	"time"
)

// CursorStore keeps the per-channel "last handled message" ids across
// restarts (the daemon passes its BoltDB key/value store). With it, messages
// sent while the daemon process was down are fetched from history when it
// comes back; without it, only gaps inside one process are caught up.
type CursorStore interface {
	KVGet(ctx context.Context, key string) ([]byte, bool, error)
	KVPut(ctx context.Context, key string, val []byte) error
}

// cursorsKey is the KV key holding {channel id: last handled message id}.
const cursorsKey = "discord/cursors"

// DefaultCursorFlush is how often advanced cursors are written to the store
// (a channel seen for the first time is written before its first message is
// handed on: saveCursors).
// A cursor that is behind after a crash only means messages are fetched
// again, and the handler's persisted dedup drops them.
const DefaultCursorFlush = 2 * time.Second

// loadCursors starts tracking the channels saved by an earlier run, so the
// first READY catches each of them up.
func (c *Adapter) loadCursors(ctx context.Context) {
	if c.opts.Cursors == nil {
		return
	}
	raw, ok, err := c.opts.Cursors.KVGet(ctx, cursorsKey)
	if err != nil {
		c.log.Warn("discord: reading saved cursors failed; messages sent while stopped are not fetched", "err", err)
		return
	}
	if !ok {
		return
	}
	var saved map[string]string
	if err := json.Unmarshal(raw, &saved); err != nil {
		c.log.Warn("discord: saved cursors are unreadable; ignoring them", "err", err)
		return
	}
	for id, last := range saved {
		if _, known := c.cursorOf(id); !known && id != "" && last != "" {
			c.setCursor(id, last)
		}
	}
}

// snapshotCursors returns the tracked cursors as saved, and the number of
// channels ever added to them when it was taken (cursorGen).
func (c *Adapter) snapshotCursors() (map[string]string, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.cursors))
	for id, cur := range c.cursors {
		out[id] = cur.last
	}
	return out, c.cursorGen
}

// saveCursors writes the cursors now (a new channel appeared), unless a
// write that started after the caller's channel was added already saved it.
//
// Lanes save concurrently, one at a time (the snapshot and its write go
// together, so an older snapshot never overwrites a newer one). When many
// new channels arrive at once (a burst of first DMs, a restart), each used
// to wait for every earlier save's fsynced write: Discord intake ran one new
// channel per commit. Now the lanes that waited behind a save find their
// channel in it and go on.
func (c *Adapter) saveCursors(ctx context.Context) {
	if c.opts.Cursors == nil {
		return
	}
	c.mu.Lock()
	need := c.cursorGen // includes the caller's channel, added before this call
	c.mu.Unlock()
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	if c.savedGen >= need {
		return
	}
	snap, gen := c.snapshotCursors()
	raw, err := json.Marshal(snap)
	if err != nil {
		return
	}
	if err := c.opts.Cursors.KVPut(ctx, cursorsKey, raw); err != nil {
		c.log.Warn("discord: saving cursors failed", "err", err)
		return
	}
	c.savedGen = gen
}

// flushCursors saves the cursors every CursorFlush while ctx lives, and once
// more when it ends.
func (c *Adapter) flushCursors(ctx context.Context) {
	if c.opts.Cursors == nil {
		return
	}
	t := time.NewTicker(c.opts.CursorFlush)
	defer t.Stop()
	var last []byte
	save := func(ctx context.Context) {
		c.saveMu.Lock()
		defer c.saveMu.Unlock()
		snap, gen := c.snapshotCursors()
		raw, err := json.Marshal(snap)
		if err != nil || string(raw) == string(last) {
			return
		}
		if err := c.opts.Cursors.KVPut(ctx, cursorsKey, raw); err != nil {
			c.log.Warn("discord: saving cursors failed", "err", err)
			return
		}
		last = raw
		c.savedGen = max(c.savedGen, gen)
	}
	for {
		select {
		case <-ctx.Done():
			save(context.WithoutCancel(ctx))
			return
		case <-t.C:
			save(ctx)
		}
	}
}

// cursor is the delivery state of one Discord channel (or thread).
type cursor struct {
	last   string // last message id delivered (or skipped on purpose)
	behind bool   // a message after last could not be handed to the sink
	seen   time.Time
}

func (c *Adapter) cursorOf(id string) (cursor, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.cursors[id]
	if !ok {
		return cursor{}, false
	}
	return *cur, true
}

// setCursor moves the channel's cursor forward to last (never backwards),
// starting to track the channel if needed.
func (c *Adapter) setCursor(id, last string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.cursors[id]
	if !ok {
		if len(c.cursors) >= c.opts.MaxTrackedChannels {
			c.evictOldestLocked()
		}
		cur = &cursor{}
		c.cursors[id] = cur
		c.cursorGen++
	}
	if cur.last == "" || snowLess(cur.last, last) {
		cur.last = last
	}
	cur.seen = time.Now()
}

func (c *Adapter) markBehind(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.cursors[id]; ok {
		cur.behind = true
	}
}

func (c *Adapter) clearBehind(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.cursors[id]; ok {
		cur.behind = false
	}
}

func (c *Adapter) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cursors, id)
}

func (c *Adapter) evictOldestLocked() {
	var oldest string
	var at time.Time
	for id, cur := range c.cursors {
		if oldest == "" || cur.seen.Before(at) {
			oldest, at = id, cur.seen
		}
	}
	delete(c.cursors, oldest)
}

// trackedChannels lists tracked channel ids (only those behind if onlyBehind).
func (c *Adapter) trackedChannels(onlyBehind bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.cursors))
	for id, cur := range c.cursors {
		if !onlyBehind || cur.behind {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}
