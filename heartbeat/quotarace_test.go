package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// The per-chat job quota holds when the model calls the schedule tool
// several times at once (the agent runs a step's tool calls in parallel).
func TestScheduleToolQuotaHoldsForParallelCalls(t *testing.T) {
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	r := newJobsRig(t, now, time.UTC)
	tool := NewScheduleTool(r.j)
	ctx := chatCtx("telegram:42", "", "")
	for i := range MaxJobsPerChat - 2 {
		if _, err := tool.Call(ctx, json.RawMessage(fmt.Sprintf(`{"action":"create","text":"r%d","in":"1h"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	const parallel = 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, parallel)
	for i := range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = tool.Call(ctx, json.RawMessage(fmt.Sprintf(`{"action":"create","text":"p%d","in":"2h"}`, i)))
		}()
	}
	close(start)
	wg.Wait()
	refused := 0
	for _, err := range errs {
		if err != nil {
			if !strings.Contains(err.Error(), "too many jobs for this chat") {
				t.Errorf("unexpected error %v", err)
			}
			refused++
		}
	}
	recs, err := r.store.ListJobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != MaxJobsPerChat || refused != parallel-2 {
		t.Fatalf("the chat has %d jobs (%d of %d parallel creates refused), want %d (the quota)", len(recs), refused, parallel, MaxJobsPerChat)
	}
}
