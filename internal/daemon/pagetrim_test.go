package daemon_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// releases records the daemon's idle memory releases (Options.OnMemoryRelease).
type releases struct {
	mu sync.Mutex
	at []time.Time
}

func (r *releases) add() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, time.Now())
}

func (r *releases) list() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at...)
}

// Issue 19: an idle daemon hands its start-up pages back once its channels
// are connected, and memory again at every idle interval; a daemon in the
// middle of a conversation is left alone.
func TestIdleDaemonReleasesMemory(t *testing.T) {
	const every = 40 * time.Millisecond
	llm := fakellm.Start(t, fakellm.Text("ok"))
	tg := faketelegram.New(t, faketelegram.Options{})
	var rel releases
	// The run command's P counts (runtimedefaults.go), here 1 idle and 3 busy.
	prev := runtime.GOMAXPROCS(3)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	startDaemonWith(t, telegramConfig(t, llm, tg), &logBuf{}, 2*time.Second, func(o *daemon.Options) {
		o.ReleaseIdleMemory, o.IdleTrimEvery, o.OnMemoryRelease = true, every, rel.add
		o.Procs = daemon.Procs{Idle: 1, Busy: 3}
	}, tg.Token())

	eventually(t, "memory released once the channel is up, then at idle intervals", func() bool { return len(rel.list()) >= 3 })
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("idle daemon runs GOMAXPROCS %d, want the idle count 1", n)
	}

	// A turn that outlasts many intervals (the model answers once the test
	// watched them go by): no release while its session is active.
	answer := make(chan struct{})
	var answerOnce sync.Once
	letAnswer := func() { answerOnce.Do(func() { close(answer) }) }
	t.Cleanup(letAnswer) // before the fake model closes: no call left waiting
	llm.SetResponder(func(*fakellm.Request) fakellm.Response {
		select {
		case <-answer:
		case <-time.After(waitLong):
		}
		return fakellm.Response{Content: "a slow answer"}
	})
	tg.UserSays(tgUser, "hello")
	eventually(t, "the turn started", func() bool { return llm.RequestCount() == 1 })
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Errorf("with a message in, GOMAXPROCS is %d, want the busy count 3", n)
	}
	time.Sleep(2 * every) // a release decided just before the message may still finish
	atStart := len(rel.list())
	time.Sleep(8 * every)
	if n := len(rel.list()) - atStart; n > 0 {
		t.Errorf("memory released %d times while a turn was running", n)
	}
	letAnswer()
	eventually(t, "the slow answer delivered", func() bool {
		s := tg.Sent(tgUser)
		return len(s) == 1 && s[0].Plain == "a slow answer"
	})
	after := len(rel.list())
	eventually(t, "releases resume once the daemon is idle again", func() bool { return len(rel.list()) > after })
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("idle again, GOMAXPROCS is %d, want 1", n)
	}
}
