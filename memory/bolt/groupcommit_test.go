package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
	bbolt "go.etcd.io/bbolt"
)

// TestGroupCommitConcurrentWritesAndIsolatedFailure: with GroupCommit,
// concurrent Accepts all commit (duplicates detected across them), and a
// write that fails — or panics — in a shared transaction returns its own
// error while the writes grouped with it still commit.
func TestGroupCommitConcurrentWritesAndIsolatedFailure(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "gc.db"), memory.Options{GroupCommit: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	dups, ids := 0, map[uint64]bool{}
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every message id twice: one of each pair is a duplicate.
			id, dup, err := s.Accept(ctx, memory.InboxItem{Channel: "t", MessageID: fmt.Sprint(i / 2), SessionKey: "t:1", Payload: []byte("{}")})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if dup {
				dups++
			} else {
				ids[id] = true
			}
		}()
	}
	boom := errors.New("boom")
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.batch(ctx, "failing", func(tx *bbolt.Tx) error {
				switch i {
				case 0:
					return boom
				case 1:
					panic("kaboom")
				}
				return tx.Bucket(bKV).Put([]byte("survivor"), []byte("yes"))
			})
		}()
	}
	wg.Wait()
	if dups != 100 || len(ids) != 100 {
		t.Errorf("%d duplicates and %d distinct ids, want 100 and 100", dups, len(ids))
	}
	if !errors.Is(errs[0], boom) {
		t.Errorf("failing write returned %v, want its own error", errs[0])
	}
	if errs[1] == nil {
		t.Error("panicking write returned no error")
	}
	if errs[2] != nil {
		t.Errorf("healthy write grouped with failures: %v", errs[2])
	}
	if v, ok, _ := s.KVGet(ctx, "survivor"); !ok || string(v) != "yes" {
		t.Error("the healthy write was not committed")
	}
	pending, err := s.InboxPending(ctx)
	if err != nil || len(pending) != 100 {
		t.Errorf("inbox holds %d items (err %v), want 100", len(pending), err)
	}
}
