package retry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/retry"
)

// waits records the waits Do asks for without waiting.
type waits []time.Duration

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	*w = append(*w, d)
	return ctx.Err()
}

var (
	errDown  = errors.New("503 service unavailable")
	errLimit = errors.New("429 too many requests")
	errNo    = errors.New("403 forbidden")
)

// script returns an op failing with errs in turn, then succeeding.
func script(calls *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}
}

func TestDo(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		policy    retry.Policy
		errs      []error
		wantCalls int
		wantWaits []time.Duration
		wantErr   error
	}{
		{"doubles up to Max, then succeeds", retry.Policy{Initial: ms, Max: 4 * ms},
			[]error{errDown, errDown, errDown, errDown}, 5, []time.Duration{ms, 2 * ms, 4 * ms, 4 * ms}, nil},
		{"gives up after MaxTries with the last error", retry.Policy{Initial: ms, Max: 10 * ms, MaxTries: 3},
			[]error{errDown, errDown, errLimit, errDown}, 3, []time.Duration{ms, 2 * ms}, errLimit},
		{"a permanent error is not retried", retry.Policy{Initial: ms, MaxTries: 5},
			[]error{errDown, retry.Permanent(errNo)}, 2, []time.Duration{ms}, errNo},
		{"After waits what the server asked when longer than the step", retry.Policy{Initial: ms, Max: 10 * ms},
			[]error{retry.After(7*ms, errLimit), errDown}, 3, []time.Duration{7 * ms, 2 * ms}, nil},
		{"After shorter than the step waits the step", retry.Policy{Initial: 5 * ms, Max: 10 * ms},
			[]error{errDown, retry.After(ms, errLimit)}, 3, []time.Duration{5 * ms, 10 * ms}, nil},
		{"After is capped by MaxWait", retry.Policy{Initial: ms, MaxWait: 50 * ms},
			[]error{retry.After(time.Hour, errLimit)}, 2, []time.Duration{50 * ms}, nil},
		{"After's error comes back plain when tries run out", retry.Policy{MaxTries: 1},
			[]error{retry.After(time.Second, errLimit)}, 1, nil, errLimit},
		{"a wrapped Permanent still stops", retry.Policy{Initial: ms},
			[]error{fmt.Errorf("send: %w", retry.Permanent(errNo))}, 1, nil, errNo},
		{"MaxElapsed stops before a wait that would pass it", retry.Policy{Initial: time.Hour, MaxElapsed: time.Minute},
			[]error{errDown}, 1, nil, errDown},
		{"Max below Initial keeps Initial", retry.Policy{Initial: 3 * ms, Max: ms},
			[]error{errDown, errDown}, 3, []time.Duration{3 * ms, 3 * ms}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w waits
			var notified []time.Duration
			p := tt.policy
			p.Sleep = w.sleep
			p.OnRetry = func(attempt int, wait time.Duration, err error) {
				if attempt != len(notified)+1 || err == nil {
					t.Errorf("OnRetry(%d, %v, %v) after %d retries", attempt, wait, err, len(notified))
				}
				notified = append(notified, wait)
			}
			calls := 0
			err := retry.Do(context.Background(), p, script(&calls, tt.errs...))
			if calls != tt.wantCalls {
				t.Errorf("op called %d times, want %d", calls, tt.wantCalls)
			}
			if !slices.Equal(w, tt.wantWaits) || !slices.Equal(notified, tt.wantWaits) {
				t.Errorf("waited %v (notified %v), want %v", w, notified, tt.wantWaits)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// A marker never leaks to the caller: the error Do returns is op's own.
func TestDoReturnsTheCauseItself(t *testing.T) {
	for _, mark := range []func(error) error{retry.Permanent, func(e error) error { return retry.After(time.Hour, e) }} {
		err := retry.Do(context.Background(), retry.Policy{MaxTries: 1}, func(context.Context) error { return mark(errNo) })
		if err != errNo {
			t.Errorf("Do returned %T %v, want errNo itself", err, err)
		}
	}
	if retry.Permanent(nil) != nil || retry.After(time.Second, nil) != nil {
		t.Error("a marker around nil is not nil")
	}
}

// Cancelling ends Do at once with op's last error: during a wait (the real
// Sleep, a one-hour step) and right after an attempt (no wait begins).
func TestDoCancelled(t *testing.T) {
	t.Run("during the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		done := make(chan error, 1)
		go func() {
			done <- retry.Do(ctx, retry.Policy{Initial: time.Hour,
				OnRetry: func(int, time.Duration, error) { cancel() }}, script(&calls, errDown, errDown))
		}()
		if err := <-done; !errors.Is(err, errDown) || calls != 1 {
			t.Fatalf("err %v after %d calls, want errDown after 1", err, calls)
		}
	})
	t.Run("after an attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls, retries := 0, 0
		err := retry.Do(ctx, retry.Policy{OnRetry: func(int, time.Duration, error) { retries++ }},
			func(context.Context) error { calls++; cancel(); return errDown })
		if !errors.Is(err, errDown) || calls != 1 || retries != 0 {
			t.Fatalf("err %v calls %d retries %d", err, calls, retries)
		}
	})
	t.Run("a Sleep of the caller's own stops it", func(t *testing.T) {
		closed := errors.New("closed")
		calls := 0
		err := retry.Do(context.Background(), retry.Policy{Sleep: func(context.Context, time.Duration) error { return closed }},
			script(&calls, errDown, errDown))
		if !errors.Is(err, errDown) || calls != 1 {
			t.Fatalf("err %v after %d calls", err, calls)
		}
	})
}

// Jitter spreads the waits around each step, within ±Jitter, and Reset starts over.
func TestBackoffJitter(t *testing.T) {
	p := retry.Policy{Initial: time.Second, Max: 8 * time.Second, Jitter: retry.DefaultJitter}
	steps := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	seen := map[time.Duration]bool{}
	for range 50 {
		b := p.Backoff()
		for i, step := range steps {
			d := b.Next()
			lo, hi := time.Duration(float64(step)*(1-p.Jitter)), time.Duration(float64(step)*(1+p.Jitter))
			if d < lo || d > hi {
				t.Fatalf("wait %d = %v, want within [%v, %v]", i, d, lo, hi)
			}
			seen[d] = true
		}
		b.Reset()
		if d := b.Next(); d > time.Duration(float64(time.Second)*(1+p.Jitter)) {
			t.Fatalf("after Reset the wait is %v", d)
		}
	}
	if len(seen) < 200 {
		t.Errorf("only %d distinct waits in 250: not jittered", len(seen))
	}
	exact := retry.Policy{Initial: time.Second, Max: 3 * time.Second}.Backoff()
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		if d := exact.Next(); d != want {
			t.Fatalf("without jitter: %v, want %v", d, want)
		}
	}
}

func TestSleep(t *testing.T) {
	if err := retry.Sleep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if err := retry.Sleep(context.Background(), time.Microsecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := retry.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Sleep: %v", err)
	}
	if err := retry.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Sleep(0): %v", err)
	}
}
