package lanes

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// hangWait bounds a wait for something the test caused: a hang guard, not a
// timing assertion (microseconds on a quiet machine, seconds on a loaded one).
const hangWait = time.Minute

// waitFor fails the test if ch is not closed/sent to within hangWait.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(hangWait):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestLanesOtherKeysDoNotWaitForABlockedKey(t *testing.T) {
	l := New(Options{Workers: 2})
	defer l.Close()
	release := make(chan struct{})
	started := make(chan struct{})
	if err := l.TrySubmit("B", func() { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, started, "B's job to start")
	for i := range 3 {
		if err := l.TrySubmit("B", func() {}); err != nil {
			t.Fatalf("B job %d: %v", i, err)
		}
	}
	doneA := make(chan struct{})
	var got []int
	for i := range 5 {
		if err := l.TrySubmit("A", func() {
			got = append(got, i) // A's jobs never overlap: no lock needed
			if i == 4 {
				close(doneA)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, doneA, "A's jobs while B is blocked")
	if fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Fatalf("A ran %v, want in order", got)
	}
	close(release)
}

func TestLanesKeepsEachKeyInOrderUnderConcurrency(t *testing.T) {
	l := New(Options{Workers: 4, Depth: 1000})
	const keys, per = 20, 50
	var mu sync.Mutex
	seen := map[string][]int{}
	running := map[string]bool{}
	var overlap bool
	var wg sync.WaitGroup
	wg.Add(keys * per)
	for i := range per {
		for k := range keys {
			key := fmt.Sprint("chat", k)
			err := l.TrySubmit(key, func() {
				defer wg.Done()
				mu.Lock()
				if running[key] {
					overlap = true
				}
				running[key] = true
				mu.Unlock()
				time.Sleep(10 * time.Microsecond)
				mu.Lock()
				running[key] = false
				seen[key] = append(seen[key], i)
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	l.Close()
	if overlap {
		t.Fatal("two jobs of one key ran at the same time")
	}
	for k, s := range seen {
		for i, v := range s {
			if v != i {
				t.Fatalf("%s ran %v, want 0..%d in order", k, s, per-1)
			}
		}
	}
	if n, q := l.Stats(); n != 0 || q != 0 {
		t.Fatalf("after draining: %d lanes, %d queued; want none kept", n, q)
	}
}

func TestLanesBoundsAndOverflow(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	record := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	overflowed := make(chan struct{})
	l := New(Options{Workers: 1, Depth: 2, MaxLanes: 2, OnOverflow: func(key string) {
		record("overflow:" + key)
		close(overflowed)
	}})
	defer l.Close()
	started := make(chan struct{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.TrySubmit("A", func() { close(started); <-release; record("A0") }))
	waitFor(t, started, "A0")
	must(l.TrySubmit("A", func() { record("A1") }))
	must(l.TrySubmit("A", func() { record("A2") }))
	if err := l.TrySubmit("A", func() { record("A3") }); !errors.Is(err, ErrLaneFull) {
		t.Fatalf("third queued job: %v, want ErrLaneFull", err)
	}
	if err := l.TrySubmit("A", func() { record("A4") }); !errors.Is(err, ErrLaneFull) {
		t.Fatalf("fourth queued job: %v, want ErrLaneFull", err)
	}
	must(l.TrySubmit("B", func() { record("B0") }))
	if err := l.TrySubmit("C", func() {}); !errors.Is(err, ErrTooManyLanes) {
		t.Fatalf("third key: %v, want ErrTooManyLanes", err)
	}
	close(release)
	waitFor(t, overflowed, "the overflow callback")
	mu.Lock()
	defer mu.Unlock()
	var a []string
	for _, s := range order {
		if s != "B0" {
			a = append(a, s)
		}
	}
	if fmt.Sprint(a) != "[A0 A1 A2 overflow:A]" {
		t.Fatalf("A's lane ran %v, want the queued jobs then one overflow call", a)
	}
}

func TestLanesCloseAbandonsQueuedAndWaitsForRunning(t *testing.T) {
	l := New(Options{Workers: 1})
	release := make(chan struct{})
	started := make(chan struct{})
	var finished, ranLater bool
	if err := l.TrySubmit("A", func() { close(started); <-release; finished = true }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, started, "the running job")
	for range 3 {
		if err := l.TrySubmit("A", func() { ranLater = true }); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan int)
	go func() { closed <- l.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a job was still running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if n := <-closed; n != 3 {
		t.Fatalf("Close abandoned %d jobs, want 3", n)
	}
	if !finished || ranLater {
		t.Fatalf("running job finished=%t, queued job ran=%t; want true, false", finished, ranLater)
	}
	if err := l.TrySubmit("A", func() {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func TestKeyedMutex(t *testing.T) {
	var k KeyedMutex
	unlockA := k.Lock("A")
	got := make(chan string, 2)
	go func() { u := k.Lock("B"); got <- "B"; u() }()
	if s := <-got; s != "B" {
		t.Fatal(s)
	}
	go func() { u := k.Lock("A"); got <- "A2"; u() }()
	select {
	case s := <-got:
		t.Fatalf("%s got A while it was held", s)
	case <-time.After(20 * time.Millisecond):
	}
	unlockA()
	unlockA() // idempotent
	if s := <-got; s != "A2" {
		t.Fatal(s)
	}
	for deadline := time.Now().Add(hangWait); k.Len() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys kept after all unlocked", k.Len())
		}
	}
}
