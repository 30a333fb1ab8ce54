package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/storetest"
)

// BenchmarkAcceptAppendParallel measures the inbound path of many concurrent
// sessions with real fsync: Accept (dedup + inbox, durable) then AppendTurn of
// a four-message turn answering it. One op = one message accepted and answered.
func BenchmarkAcceptAppendParallel(b *testing.B) {
	const sessions = 64
	s, err := Open(filepath.Join(b.TempDir(), FileName), memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(16) // 16 × GOMAXPROCS goroutines, like many chats at once
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			key := fmt.Sprintf("telegram:%d", n%sessions)
			id, dup, err := s.Accept(ctx, memory.InboxItem{Channel: "telegram", MessageID: fmt.Sprint(n), SessionKey: key, Payload: []byte(`{"text":"hi"}`)})
			if err != nil || dup {
				b.Errorf("Accept: dup=%v err=%v", dup, err)
				return
			}
			turn := storetest.ToolTurn(int(n), 1)
			turn.Sources = []uint64{id}
			if err := s.AppendTurn(ctx, key, turn); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
