package agent

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// BenchmarkLoopIteration measures the agent's own overhead per loop iteration
// against the fake model on loopback: each op is one turn of two iterations
// (a tool call, then the answer), so ns/iteration = ns/op ÷ 2. It includes
// HTTP + SSE on 127.0.0.1, context building, schema validation, the tool
// call and the session commit; the fake answers instantly.
func BenchmarkLoopIteration(b *testing.B) {
	h := newHarness(b, func(r *fakellm.Request) fakellm.Response {
		if r.LastMessage().Role == "tool" {
			return fakellm.Response{Content: "It is 10:00 in Oslo."}
		}
		return fakellm.Response{ToolCalls: []fakellm.ToolCall{call("now", `{"tz":"Europe/Oslo"}`)}}
	},
		func(o *Options) { o.Now = time.Now; o.MaxHistory = 10 }, constTool("now", "10:00"))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := h.agent.ProcessMessage(ctx, Request{SessionKey: "bench", Text: "What time is it in Oslo?"})
		if err != nil || res.Text != "It is 10:00 in Oslo." || res.Iterations != 2 {
			b.Fatalf("%v %q %d", err, res.Text, res.Iterations)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/iteration")
}
