package daemon

import (
	"runtime"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/metrics"
	"github.com/switchboard-bot/switchboard/internal/ui"
)

// A message that arrives while the idle release is lowering the P count
// must not leave the daemon at the idle count: either the lowering sees it
// and gives up, or the message raises the count again after it.
func TestProcScalerMessageDuringLowering(t *testing.T) {
	prev := runtime.GOMAXPROCS(3)
	defer runtime.GOMAXPROCS(prev)
	// racing is a message whose MessageIn runs on its own goroutine while
	// the lowering is deciding. The lowering waits up to 50 ms for it: a
	// MessageIn that does not wait for the lowering to finish (and so cannot
	// undo it) is over by then.
	var racing chan struct{}
	message := func(p *procScaler) {
		racing = make(chan struct{})
		go func() { defer close(racing); p.busy() }()
		select {
		case <-racing:
		case <-time.After(50 * time.Millisecond):
		}
	}
	tests := []struct {
		name      string
		stillIdle func(p *procScaler) bool
		want      int
	}{
		{"idle throughout", func(*procScaler) bool { return true }, 1},
		{"message counted before the re-check: lowering gives up", func(p *procScaler) bool {
			message(p)
			return false
		}, 3},
		{"message right after the re-check: it raises the count again", func(p *procScaler) bool {
			message(p)
			return true
		}, 3},
		{"no predicate: start-up", nil, 1},
	}
	for _, tt := range tests {
		runtime.GOMAXPROCS(3)
		p := &procScaler{procs: Procs{Idle: 1, Busy: 3}}
		var still func() bool
		if tt.stillIdle != nil {
			still = func() bool { return tt.stillIdle(p) }
		}
		racing = nil
		p.idle(still)
		if racing != nil {
			<-racing
		}
		if got := runtime.GOMAXPROCS(0); got != tt.want {
			t.Errorf("%s: GOMAXPROCS %d, want %d", tt.name, got, tt.want)
		}
		p.busy()
		if got := runtime.GOMAXPROCS(0); got != 3 {
			t.Errorf("%s: after the next message GOMAXPROCS %d, want the busy count 3", tt.name, got)
		}
	}
}

// A turn no new message started (the inbox replayed at start, a scheduled
// job, a turn for a message another replica accepted) takes the busy count
// too.
func TestTurnWithoutMessageTakesBusyProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(3)
	defer runtime.GOMAXPROCS(prev)
	p := &procScaler{procs: Procs{Idle: 1, Busy: 3}}
	p.idle(nil)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("idle: GOMAXPROCS %d, want 1", got)
	}
	o := consoleObserver{metrics.New(), ui.NewStats(time.Now), p}
	o.TurnDone("telegram", agent.Result{Text: "reminder"}, nil, time.Millisecond)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("after a turn: GOMAXPROCS %d, want the busy count 3", got)
	}
}
