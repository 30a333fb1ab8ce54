package daemon_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// Issue 13 defect 11: a password or ?api-key= inside llm.base_url was printed
// by /admin/status (and so `switchboard status` and the /status command).
// The status shows the URL with its credentials redacted; the log never
// carries them (startDaemon's secrets).
func TestStatusRedactsURLCredentials(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	const pass, query = "pw-in-url-0001", "sk-in-query-0002"
	cfg := baseConfig(t, llm)
	cfg.LLM.BaseURL = strings.Replace(llm.URL, "http://", "http://alice:"+pass+"@", 1) + "?api-key=" + query
	r := startDaemon(t, cfg, pass, query)
	code, body := adminCall(t, r, http.MethodGet, "/admin/status", nil)
	if code != http.StatusOK {
		t.Fatalf("/admin/status = %d %q", code, body)
	}
	text := r.d.StatusText(context.Background())
	for _, out := range []string{body, text} {
		if strings.Contains(out, pass) || strings.Contains(out, query) {
			t.Errorf("status prints a credential from llm.base_url:\n%s", out)
		}
		if !strings.Contains(out, "alice:[redacted]@") || !strings.Contains(out, "api-key=[redacted]") {
			t.Errorf("status does not show the endpoint redacted:\n%s", out)
		}
	}
}
