package ui_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/memory"
)

var recentRow = regexp.MustCompile(`<tr data-turn="([^"]+)"><td>[^<]*</td><td>([^<]*)</td>`)

// recentRows is the overview's "Last turns" table: turn id and channel,
// newest first.
func recentRows(t *testing.T, c *client) []string {
	t.Helper()
	body := c.get("/ui/").Body
	i := strings.Index(body, `id="recent-turns"`)
	if i < 0 {
		t.Fatal("the overview has no Last turns table")
	}
	table := body[i:]
	table = table[:strings.Index(table, "</table>")]
	if strings.Contains(table, "No turns yet.") {
		return nil
	}
	var out []string
	for _, m := range recentRow.FindAllStringSubmatch(table, -1) {
		out = append(out, m[1]+"@"+m[2])
	}
	return out
}

// Issue 34: the overview's "Last turns" come from the store too, so after a
// restart they still show (newest first, with the model that answered)
// instead of "No turns yet."; the turns of this process come first.
func TestOverviewLastTurnsSurviveARestart(t *testing.T) {
	r := startConsole(t, cOptions{})
	now := time.Now()
	for i, c := range []struct {
		key string
		ago time.Duration
	}{{"telegram:42", 3 * 24 * time.Hour}, {"slack:C1", 2 * time.Hour}, {"discord:9", 10 * time.Minute}} {
		ended := now.Add(-c.ago)
		turn := memory.Turn{ID: fmt.Sprintf("earlier-%d", i), Started: ended.Add(-2 * time.Second), Ended: ended,
			FinishReason: "final", Answer: "ok", Models: []memory.ModelUsage{{Model: "old-model", Endpoint: "primary"}},
			Messages: []memory.Message{{Role: memory.RoleUser, Content: "hi", Time: ended.Add(-2 * time.Second)},
				{Role: memory.RoleAssistant, Content: "ok", Time: ended}}}
		if err := r.d.Store().AppendTurn(context.Background(), c.key, turn); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, r.base)
	c.login(cAdminToken)
	want := "earlier-2@discord earlier-1@slack earlier-0@telegram"
	if got := strings.Join(recentRows(t, c), " "); got != want {
		t.Fatalf("after a restart the Last turns are %q, want %q", got, want)
	}
	if body := c.get("/ui/").Body; !strings.Contains(body, "old-model (primary)") {
		t.Errorf("the earlier turns do not say which model answered")
	}
	chatTurn(t, r, "now", "hello")
	cEventually(t, "this process's turn first", func() bool {
		rows := recentRows(t, c)
		return len(rows) == 4 && strings.HasSuffix(rows[0], "@web") && strings.Join(rows[1:], " ") == want
	})
}
