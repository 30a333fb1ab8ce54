package heartbeat

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// memClaimer is a SlotClaimer over a map: the first claim of a key wins,
// as the cluster's (job, slot) primary key does.
type memClaimer struct {
	mu    sync.Mutex
	taken map[string]bool
}

func (m *memClaimer) Claim(_ context.Context, job string, slot time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.taken == nil {
		m.taken = map[string]bool{}
	}
	k := job + "@" + slot.UTC().Format(time.RFC3339Nano)
	if m.taken[k] {
		return false, nil
	}
	m.taken[k] = true
	return true, nil
}

// replicaJobs builds n Jobs over one store and one claimer, as n replicas
// over one database.
func replicaJobs(t *testing.T, r *jobsRig, n int, claimer SlotClaimer) []*Jobs {
	t.Helper()
	out := make([]*Jobs, n)
	for i := range out {
		j, err := NewJobs(Options{Store: r.store, Jobs: r.jobs, Location: r.loc, Agent: r.dir, Out: r.out,
			Now: r.clk.Now, Sent: r.sent, Claimer: claimer})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = j
	}
	return out
}

// Overlapping leaders (both tick at the same moments, as during a handover)
// and alternating leaders: every daily occurrence is delivered exactly once.
func TestClaimedJobSlotsFireOnceAcrossLeaders(t *testing.T) {
	sh := mustLoc(t, "Asia/Shanghai")
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, sh)
	cases := []struct {
		name    string
		tickers func(hour int) []int // which replicas tick at this hour
	}{
		{"both tick every time", func(int) []int { return []int{0, 1} }},
		{"leader changes every 5 hours", func(h int) []int { return []int{(h / 5) % 2} }},
		{"concurrent ticks", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newJobsRig(t, start, sh, dailyReminder(MisfireSkip))
			js := replicaJobs(t, r, 2, &memClaimer{})
			for h := 0; h < 5*24; h++ {
				now := start.Add(time.Duration(h) * time.Hour)
				r.clk.Set(now)
				if tc.tickers == nil {
					var wg sync.WaitGroup
					for _, j := range js {
						wg.Go(func() { _ = j.Tick(context.Background(), now) })
					}
					wg.Wait()
					continue
				}
				for _, i := range tc.tickers(h) {
					if err := js[i].Tick(context.Background(), now); err != nil {
						t.Fatalf("tick %s: %v", now, err)
					}
				}
			}
			perDay := map[string]int{}
			for _, d := range r.out.Sent() {
				perDay[d.At.In(sh).Format("2006-01-02")]++
			}
			if len(perDay) != 5 { // first sighting at 00:00 on the 1st, then 09:00 on the 1st..5th
				t.Fatalf("delivered on %d days (%v), want 5", len(perDay), perDay)
			}
			for day, n := range perDay {
				if n != 1 {
					t.Fatalf("%s delivered %d times, want once", day, n)
				}
			}
		})
	}
}

// A leader claimed a slot and died before running it: a recurring job does
// not repeat it (as a single host's crash mid-run), a one-shot is retried
// under a fresh slot and delivered once.
func TestSlotStrandedByDeadLeader(t *testing.T) {
	now := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC, JobSpec{Name: "standup", Schedule: "0 9 * * *", Kind: KindReminder,
		Text: "Stand-up", DeliverTo: []string{"telegram:1"}, Misfire: MisfireSkip, Grace: 5 * time.Minute})
	claimer := &memClaimer{}
	j := replicaJobs(t, r, 1, claimer)[0]
	ctx := context.Background()
	if err := j.Tick(ctx, now); err != nil { // first sighting
		t.Fatal(err)
	}
	nine := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	at := nine.Add(30 * time.Minute)
	if err := j.Create(ctx, JobSpec{Name: "pay-rent", Kind: KindReminder, Text: "Pay the rent", At: at,
		DeliverTo: []string{"telegram:2"}, Misfire: MisfireRunOnce, CreatedBy: "telegram:2"}); err != nil {
		t.Fatal(err)
	}
	// The dead leader's claims.
	_, _ = claimer.Claim(ctx, "standup", nine)
	_, _ = claimer.Claim(ctx, "pay-rent", at)
	for _, tm := range []time.Time{nine, at, at.Add(2 * time.Minute), at.Add(4 * time.Minute)} {
		r.clk.Set(tm)
		if err := j.Tick(ctx, tm); err != nil {
			t.Fatalf("tick %s: %v", tm, err)
		}
	}
	got := map[string]int{}
	for _, d := range r.out.Sent() {
		got[d.Target+" "+d.Text]++
	}
	want := map[string]int{"telegram:2 Pay the rent": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("deliveries %v, want %v", got, want)
	}
}

// A greeting slot another replica claimed is not greeted now; the slot
// stays due and the next tick greets under a fresh key, once.
func TestGreetingSlotClaimedElsewhereIsRetried(t *testing.T) {
	now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)
	r := newRig(t, now)
	out := newFakeOut(r.clk)
	claimer := &memClaimer{}
	h, err := NewHeartbeat(Options{Store: r.store, Heartbeat: hbConfig("", 1, time.Hour, "telegram:1"), Location: time.UTC,
		Now: r.clk.Now, Agent: &fakeDirecter{}, Out: out, Claimer: claimer})
	if err != nil {
		t.Fatal(err)
	}
	p := h.Plan("telegram:1", now)
	_, _ = claimer.Claim(context.Background(), greetingKey("telegram:1", 0), p.Slots[0])
	tick := p.Slots[0].Add(time.Minute)
	actions := []string{}
	for i := range 3 {
		ds, err := h.Tick(context.Background(), tick.Add(time.Duration(i)*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		actions = append(actions, ds[0].Action)
	}
	want := []string{ActionFailed, ActionGreeted, ActionWaiting}
	if fmt.Sprint(actions) != fmt.Sprint(want) {
		t.Fatalf("actions %v, want %v", actions, want)
	}
	if n := len(out.Sent()); n != 1 {
		t.Fatalf("%d greetings delivered, want 1", n)
	}
}

// Lead runs again after a lost leadership; after Stop it refuses.
func TestLeadRunsAgainAfterLosingLeadership(t *testing.T) {
	r := newRig(t, time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC))
	s, err := New(Options{Store: r.store, Now: r.clk.Now, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	for term := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Lead(ctx) }()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("leadership %d: %v", term+1, err)
		}
	}
	s.Stop()
	if err := s.Lead(context.Background()); err == nil {
		t.Fatal("Lead after Stop did not refuse")
	}
}
