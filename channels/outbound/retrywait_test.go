package outbound_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/channels/outbound"
)

// recordedWaits is an Options.Sleep that records the waits without waiting.
type recordedWaits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (r *recordedWaits) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.d = append(r.d, d)
	return ctx.Err()
}

// Issue 29: delivery retries follow the one retry policy (internal/retry):
// temporary errors back off with jitter, so chats that failed together do
// not retry together; a rate limit waits at least the platform's
// retry_after (never less than the backoff step, at most MaxWait).
func TestRetryWaits(t *testing.T) {
	s := time.Second
	temp := channels.Temporary(errors.New("502 Bad Gateway"))
	limited := func(d time.Duration) error { return channels.RateLimited(d, errors.New("429 Too Many Requests")) }
	type span struct{ lo, hi time.Duration }
	about := func(d time.Duration) span { return span{d * 8 / 10, d * 12 / 10} } // ±20% jitter
	exactly := func(d time.Duration) span { return span{d, d} }
	tests := []struct {
		name   string
		errs   []error
		want   []span
		jitter bool // the waits are not all exactly the steps
	}{
		{"temporary errors back off, doubling to MaxDelay, jittered", []error{temp, temp, temp, temp, temp},
			[]span{about(s), about(2 * s), about(4 * s), about(8 * s), about(8 * s)}, true},
		{"a rate limit waits the platform's retry_after", []error{limited(3 * s)},
			[]span{exactly(3 * s)}, false},
		{"a retry_after shorter than the backoff step waits the step", []error{temp, temp, limited(10 * time.Millisecond)},
			[]span{about(s), about(2 * s), about(4 * s)}, false},
		{"a retry_after over MaxWait waits MaxWait", []error{limited(time.Hour)},
			[]span{exactly(time.Minute)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waits := &recordedWaits{}
			out := outbound.New(nil, outbound.Options{BaseDelay: s, MaxDelay: 8 * s, MaxWait: time.Minute, Sleep: waits.sleep})
			ch := console.NewMemory("memory", 4000, 0)
			ch.FailNext(tt.errs...)
			target := channels.Target{Channel: "memory", ChatID: "c1"}
			if _, err := out.Deliver(context.Background(), ch, outbound.Delivery{Target: target, Markdown: "hello"}); err != nil {
				t.Fatalf("Deliver: %v", err)
			}
			if got := ch.Sent(target.String()); len(got) != 1 || got[0].Text != "hello" {
				t.Fatalf("chat shows %+v, want the answer once", got)
			}
			if st := out.Stats(); st.Retried != uint64(len(tt.errs)) {
				t.Errorf("Stats.Retried = %d, want %d", st.Retried, len(tt.errs))
			}
			if len(waits.d) != len(tt.want) {
				t.Fatalf("waited %v, want %d waits", waits.d, len(tt.want))
			}
			exact := true
			for i, d := range waits.d {
				if d < tt.want[i].lo || d > tt.want[i].hi {
					t.Errorf("wait %d = %v, want within [%v, %v]", i, d, tt.want[i].lo, tt.want[i].hi)
				}
				exact = exact && d == tt.want[i].lo*10/8
			}
			if tt.jitter && exact {
				t.Errorf("waits %v are exactly the backoff steps: no jitter", waits.d)
			}
		})
	}
}
