package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

func TestToolTimeoutReportedToModel(t *testing.T) {
	hang := &funcTool{name: "hang", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}
	h := newHarness(t, toolsThenAnswer("gave up", []fakellm.ToolCall{call("hang", `{}`)}),
		func(o *Options) { o.ToolTimeout = 20 * time.Millisecond }, hang)
	res, err := h.agent.ProcessMessage(context.Background(), Request{SessionKey: "s", Text: "x"})
	if err != nil || res.Text != "gave up" {
		t.Fatalf("%v %q", err, res.Text)
	}
	got := h.srv.LastRequest().ToolResults()[0].Content
	// not Repeatable, so a timeout (ambiguous) is not retried
	if !strings.Contains(got, "error: the tool did not finish within 20ms\n") || len(hang.Calls()) != 1 {
		t.Fatalf("result %q calls %d", got, len(hang.Calls()))
	}
}

func TestSecretsStayOutOfOutput(t *testing.T) {
	o := Options{APIKey: testKey, BaseURL: "http://127.0.0.1:1/v1", Model: "m"}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "opts", o)
	p := NewProvider(o)
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), logs.String(), fmt.Sprint(p)} {
		if strings.Contains(s, testKey) {
			t.Fatalf("API key leaked: %s", s)
		}
	}
	// A connection failure with the key in the URL's error text is redacted too.
	err := redact(fmt.Errorf("dial: token %s refused", testKey), testKey)
	if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatal(err)
	}
}
