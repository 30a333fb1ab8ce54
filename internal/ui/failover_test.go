package ui_test

import (
	"html"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// The console shows which model answered: the overview lists the model
// endpoints with their state and the last turns with the models that
// answered them; a turn's page names its model(s).
func TestConsoleShowsWhichModelAnswered(t *testing.T) {
	fb := fakellm.Start(t, fakellm.Text("the fallback answers"))
	r := startConsole(t, cOptions{LLM: fakellm.Reply(fakellm.Response{Status: 503}),
		LLMSection: "  fallbacks:\n    - {base_url: \"" + fb.URL + "\", model: fb-model}\n"})
	chatTurn(t, r, "fo", "hello")
	c := newClient(t, r.base)
	c.login(cAdminToken)
	home := html.UnescapeString(c.get("/ui/").Body)
	for _, want := range []string{
		`<tr data-endpoint="primary"><td>primary</td><td>fake-model</td><td class="bad">cooling down since `,
		`<tr data-endpoint="fallback 1"><td>fallback 1 <span class="muted">` + fb.URL + `</span></td><td>fb-model</td><td class="ok">up</td>`,
		`<td>web</td><td>final</td><td class="models">fb-model (fallback 1)</td>`,
	} {
		if !strings.Contains(home, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	show := html.UnescapeString(c.get("/ui/sessions/show?key=web:fo").Body)
	if !strings.Contains(show, `<span class="models">answered by fb-model (fallback 1)</span>`) {
		t.Errorf("the turn does not name its model:\n%s", show)
	}
}
