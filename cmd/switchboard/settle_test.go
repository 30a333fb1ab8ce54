package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestSettle(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	cases := []struct {
		name      string
		ready     chan struct{}
		connected func(polls *atomic.Int32) bool
		cancel    bool
		want      int32
	}{
		{"ready and connected", closed, func(*atomic.Int32) bool { return true }, false, 1},
		{"connects after a few polls", closed, func(p *atomic.Int32) bool { return p.Add(1) > 3 }, false, 1},
		{"never connects: released at the limit", closed, func(*atomic.Int32) bool { return false }, false, 1},
		{"stopped before ready", make(chan struct{}), func(*atomic.Int32) bool { return true }, true, 0},
		{"stopped while connecting", closed, func(*atomic.Int32) bool { return false }, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if c.cancel {
				cancel()
			}
			defer cancel()
			var polls, released atomic.Int32
			limit := time.Hour
			if !c.cancel {
				limit = 20 * time.Millisecond // only the "never connects" case waits for it
			}
			settle(ctx, c.ready, func() bool { return c.connected(&polls) }, time.Millisecond, limit, func() { released.Add(1) })
			if got := released.Load(); got != c.want {
				t.Errorf("released %d times, want %d", got, c.want)
			}
		})
	}
}
