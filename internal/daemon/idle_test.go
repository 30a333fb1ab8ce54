package daemon

import (
	"testing"

	"github.com/switchboard-bot/switchboard/channels/hub"
)

// The idle check between two ticks of the memory release: a message still
// being taken in (its inbox write outlasting an interval on a slow disk,
// before its session is active) is not idle — releasing then ran its turn
// at the idle P count (TestIdleDaemonReleasesMemory failed so once in CI).
func TestIdleSince(t *testing.T) {
	last := hub.HandlerStats{Received: 5, Turns: 3}
	cases := []struct {
		name string
		now  hub.HandlerStats
		want bool
	}{
		{"nothing happened", hub.HandlerStats{Received: 5, Turns: 3}, true},
		{"a message came in", hub.HandlerStats{Received: 6, Turns: 3}, false},
		{"a message counted last tick, still being taken in", hub.HandlerStats{Received: 5, Turns: 3, Intake: 1}, false},
		{"a turn queued or running", hub.HandlerStats{Received: 5, Turns: 3, ActiveSessions: 1}, false},
		{"a turn ended (a job, a replayed message)", hub.HandlerStats{Received: 5, Turns: 4}, false},
	}
	for _, c := range cases {
		if got := idleSince(last, c.now); got != c.want {
			t.Errorf("%s: idle %v, want %v", c.name, got, c.want)
		}
	}
}
