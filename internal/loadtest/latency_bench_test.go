package loadtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

// BenchmarkHandlerLatency measures handler overhead — Handle to the reply's
// Send, with an instant model over loopback and durable (fsynced) storage —
// with 1,000 live chats and messages arriving open-loop at 200/s spread over
// them (below capacity, so the figure is overhead, not queueing). Sub-benchmarks
// vary the store's write path: bolt's batch window (memory.Options.BatchDelay;
// 10ms is bolt's default), 1ms, and memory.Options.GroupCommit (what the
// daemon uses).
func BenchmarkHandlerLatency(b *testing.B) {
	for _, delay := range []time.Duration{10 * time.Millisecond, time.Millisecond} {
		b.Run("batch="+delay.String(), func(b *testing.B) { benchLatency(b, memory.Options{BatchDelay: delay}) })
	}
	b.Run("groupcommit", func(b *testing.B) { benchLatency(b, memory.Options{GroupCommit: true}) })
}

func benchLatency(b *testing.B, mo memory.Options) {
	const chats, rate = 1000, 200
	_, restore := daemon.ApplyRuntimeDefaults(os.Getenv)
	defer restore() // as the daemon runs (BenchmarkHandlerThroughput)
	url := ""
	if *inprocModel {
		llm := NewEchoModel()
		defer llm.Close()
		url = llm.URL
	} else { // the model in its own process, as in BenchmarkHandlerThroughput
		mp, err := StartModelProcess(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		defer mp.Close()
		url = mp.URL
	}
	dir := b.TempDir()
	cfg := InprocConfig(dir, url, 16)
	st, err := bolt.Open(filepath.Join(dir, "lat.db"), mo)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ag, err := daemon.NewAgent(cfg, daemon.AgentDeps{Sessions: st, Notes: st, Tools: agent.NewRegistry()}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := hub.NewHandler(hub.HandlerOptions{Store: st, Agent: ag, MaxConcurrentTurns: 16,
		Access: channels.AccessPolicy{Mode: "open"}})
	ch := NewReplyChannel("load")
	h.Register(ch)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = ch.Run(ctx, h) }()
	defer func() { cancel(); h.Close(context.Background()) }()
	for !ch.Ready() {
		time.Sleep(time.Millisecond)
	}
	// Warm: every chat has a session with one turn.
	var wg sync.WaitGroup
	for c := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := ch.Say(ctx, c, Token(c, 0), Token(c, 0))
			if err == nil {
				<-w
			}
		}()
	}
	wg.Wait()

	lats := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	for i := range b.N {
		<-tick.C
		c := i % chats
		tok := Token(c, 1+i/chats)
		wg.Add(1)
		t0 := time.Now()
		w, err := ch.Say(ctx, c, tok, tok)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			defer wg.Done()
			select {
			case at := <-w:
				lats[i] = at.Sub(t0)
			case <-time.After(30 * time.Second):
				lats[i] = 30 * time.Second
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lats)
	b.ReportMetric(float64(percentile(lats, 50))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(lats, 99))/1e6, "p99-ms")
}
