package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

// hangingStore is a memory.Prober whose probe blocks until released (a
// hung disk under bolt) or answers at once.
type hangingStore struct {
	memory.Store
	release chan struct{}
	hang    bool
}

func (s *hangingStore) Probe(ctx context.Context) error {
	if s.hang {
		<-s.release
	}
	return nil
}
func (s *hangingStore) Health() memory.Health { return memory.Health{OK: true} }
func (s *hangingStore) Path() string          { return "test.db" }

// Issue 27: a probe that is merely late (a busy machine) is not an outage;
// one still running at the next tick is, until a probe returns. An outside
// run with lease_ttl 1s saw /readyz flap to 503 several times a minute on a
// loaded machine when a single late probe counted.
func TestStoreProbeLateIsNotStuckButHungIs(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	st := &hangingStore{release: make(chan struct{}), hang: true}
	d := &Daemon{store: st, log: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil)),
		opts: Options{Now: time.Now}}

	d.probeStore(context.Background(), time.Millisecond) // runs out of its time, keeps running
	if h := d.storeHealth(); !h.OK {
		t.Fatalf("one late probe made the store unavailable: %+v", h)
	}
	d.probeStore(context.Background(), time.Millisecond) // next tick: still running
	if h := d.storeHealth(); h.OK || !strings.Contains(h.Reason, "has not answered its probe") {
		t.Fatalf("a probe still running at the next tick: health %+v, want unavailable", h)
	}
	close(st.release)
	for d.probe.running.Load() { // the hung probe returns
		time.Sleep(time.Millisecond)
	}
	if h := d.storeHealth(); !h.OK {
		t.Fatalf("after the probe returned: %+v, want available", h)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "data store unavailable"); n != 1 {
		t.Errorf("logged the outage %d times, want once:\n%s", n, logs.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
