package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A login link works once, within its lifetime, on the clock the console is
// given; the table holds hashes only and never more than maxLinks.
func TestOnceLinkLifetime(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name  string
		ttl   time.Duration
		after time.Duration
		want  bool
	}{
		{"at once", DefaultLinkTTL, 0, true},
		{"just before it expires", DefaultLinkTTL, DefaultLinkTTL - time.Nanosecond, true},
		{"when it expires", DefaultLinkTTL, DefaultLinkTTL, false},
		{"a short link, later", time.Second, 2 * time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newOnceLinks()
			tok := l.mint(t0, c.ttl)
			if b, err := hex.DecodeString(tok); err != nil || len(b) != 32 {
				t.Fatalf("token %q is not 32 random bytes in hex", tok)
			}
			if got := l.redeem(t0.Add(c.after), tok); got != c.want {
				t.Fatalf("redeem after %s = %v, want %v", c.after, got, c.want)
			}
			if l.redeem(t0.Add(c.after), tok) {
				t.Fatal("a link worked twice")
			}
		})
	}
}

func TestOnceLinkTableKeepsHashesAndIsBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := newOnceLinks()
	first := l.mint(t0, DefaultLinkTTL)
	var last string
	for i := 1; i <= maxLinks; i++ {
		last = l.mint(t0.Add(time.Duration(i)*time.Millisecond), DefaultLinkTTL)
	}
	if n := len(l.byHash); n != maxLinks {
		t.Fatalf("%d links kept, want at most %d", n, maxLinks)
	}
	if _, ok := l.byHash[sha256.Sum256([]byte(last))]; !ok {
		t.Fatal("the table is not keyed by the token's SHA-256")
	}
	if l.redeem(t0, first) {
		t.Error("the oldest link survived the bound")
	}
	if !l.redeem(t0, last) {
		t.Error("the newest link was dropped")
	}
}

// Of many browsers opening one link at once, exactly one gets in.
func TestOnceLinkIsSingleUseUnderConcurrency(t *testing.T) {
	now := time.Now()
	for range 20 {
		l := newOnceLinks()
		tok := l.mint(now, DefaultLinkTTL)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				if l.redeem(now, tok) {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("%d concurrent uses of one link succeeded, want 1", n)
		}
	}
}
