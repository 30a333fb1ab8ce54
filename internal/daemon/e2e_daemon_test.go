package daemon_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
)

// Issue 3: /readyz answers 503 naming the channel while it cannot connect,
// and 200 once it has recovered (the supervisor restarts it with backoff);
// the recovered channel answers.
func TestReadyzFollowsChannelHealth(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	sl := fakeslack.New(t, fakeslack.Options{})
	sl.SetAuthError("invalid_auth", "")
	d := startDaemon(t, slackConfig(t, llm, sl), sl.BotToken(), sl.AppToken(), slSecret)

	eventually(t, "a failed slack start", func() bool { return strings.Contains(d.log.String(), "invalid_auth") })
	code, body := d.readyz()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "slack") {
		t.Fatalf("/readyz while slack is down = %d %q, want 503 naming slack", code, body)
	}

	sl.SetAuthError("", "")
	eventually(t, "/readyz 200 after recovery", func() bool {
		code, _ := d.readyz()
		return code == http.StatusOK
	})
	sl.UserDMs(slUser, "back online?")
	slWaitText(t, sl, fakeslack.DMChannel(slUser), 1, is("echo: back online?"))
}
