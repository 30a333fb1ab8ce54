package daemon_test

import (
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
	startDaemonWith(t, telegramConfig(t, llm, tg), &logBuf{}, 2*time.Second, func(o *daemon.Options) {
		o.ReleaseIdleMemory, o.IdleTrimEvery, o.OnMemoryRelease = true, every, rel.add
	}, tg.Token())

	eventually(t, "memory released once the channel is up, then at idle intervals", func() bool { return len(rel.list()) >= 3 })

	// A turn that outlasts many intervals (the model waits 1 s before it
	// answers): no release while its session is active.
	llm.SetResponder(func(*fakellm.Request) fakellm.Response {
		return fakellm.Response{Content: "a slow answer", Delay: time.Second}
	})
	tg.UserSays(tgUser, "hello")
	eventually(t, "the turn started", func() bool { return llm.RequestCount() == 1 })
	time.Sleep(2 * every) // a release decided just before the message may still finish
	atStart := len(rel.list())
	time.Sleep(8 * every)
	if n := len(rel.list()) - atStart; n > 0 {
		t.Errorf("memory released %d times while a turn was running", n)
	}
	eventually(t, "the slow answer delivered", func() bool {
		s := tg.Sent(tgUser)
		return len(s) == 1 && s[0].Plain == "a slow answer"
	})
	after := len(rel.list())
	eventually(t, "releases resume once the daemon is idle again", func() bool { return len(rel.list()) > after })
}
