package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// openAIBaseURL is the default model endpoint, as go-openai uses it.
const openAIBaseURL = "https://api.openai.com/v1"

// ---- model endpoint ----

func (d *doctor) checkModel(ctx context.Context) Result {
	l := d.cfg.LLM
	base := strings.TrimRight(l.BaseURL, "/")
	defaultEP := base == ""
	if defaultEP {
		base = openAIBaseURL
	}
	shown := redactURL(base)
	if !l.APIKey.IsSet() && (defaultEP || isOpenAIHost(base)) {
		return Result{Status: StatusFail,
			Finding: "llm.api_key is empty and the model endpoint is OpenAI's, which needs a key",
			Fix:     "set OPENAI_API_KEY to your OpenAI API key, or set OPENAI_BASE_URL (llm.base_url) to a local OpenAI-compatible server such as http://127.0.0.1:11434/v1 (Ollama)"}
	}
	oc := openai.DefaultConfig(l.APIKey.Value())
	oc.BaseURL = base
	oc.HTTPClient = d.opts.HTTPClient
	list, err := openai.NewClientWithConfig(oc).ListModels(ctx)
	if err != nil {
		return d.modelError(ctx, shown, l.APIKey.IsSet(), err)
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	if len(ids) > 0 && !slices.Contains(ids, l.Model) {
		slices.Sort(ids)
		some := ids
		if len(some) > 8 {
			some = append(slices.Clone(some[:8]), "…")
		}
		return Result{Status: StatusWarn,
			Finding: fmt.Sprintf("%s answered, but llm.model %q is not among the %d models it lists", shown, l.Model, len(ids)),
			Fix:     "set llm.model to one of: " + strings.Join(some, ", ") + " (or pull/deploy the model on the server)"}
	}
	what := fmt.Sprintf("%s answered with a valid key; model %q is available", shown, l.Model)
	if len(ids) == 0 {
		what = fmt.Sprintf("%s answered with a valid key (it lists no models, so %q could not be confirmed)", shown, l.Model)
	}
	return Result{Status: StatusOK, Finding: what}
}

func (d *doctor) modelError(ctx context.Context, shown string, keySet bool, err error) Result {
	status, msg := 0, ""
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status, msg = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
		status = reqErr.HTTPStatusCode
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		if !keySet {
			return Result{Status: StatusFail,
				Finding: fmt.Sprintf("%s requires an API key (HTTP %d) and llm.api_key is empty", shown, status),
				Fix:     "set OPENAI_API_KEY (read by llm.api_key) to a key this endpoint accepts"}
		}
		return Result{Status: StatusFail,
			Finding: fmt.Sprintf("the model endpoint rejected the API key: %s answered HTTP %d", shown, status),
			Fix:     "set OPENAI_API_KEY (read by llm.api_key) to a valid key for this endpoint"}
	case status == http.StatusNotFound:
		return Result{Status: StatusWarn,
			Finding: fmt.Sprintf("%s/models answered 404: the server does not list models, or llm.base_url lacks the /v1 part", shown),
			Fix:     "check that llm.base_url ends with /v1 (e.g. http://127.0.0.1:11434/v1); if the server simply has no /models, nothing to do"}
	case status == http.StatusTooManyRequests:
		return Result{Status: StatusWarn,
			Finding: fmt.Sprintf("%s is rate limiting this key (HTTP 429)", shown),
			Fix:     "check the account's quota and billing, or lower agent.max_concurrent_turns"}
	case status >= 500:
		return Result{Status: StatusFail,
			Finding: fmt.Sprintf("%s is failing (HTTP %d)", shown, status),
			Fix:     "check the model server's logs or the provider's status page, then run doctor again"}
	case status > 0:
		what := fmt.Sprintf("%s answered HTTP %d to GET /models", shown, status)
		if msg != "" {
			what += ": " + oneLine(msg)
		}
		return Result{Status: StatusFail, Finding: what, Fix: "check llm.base_url and llm.api_key against the provider's documentation"}
	}
	if what, fix, ok := describeNetErr(ctx, err, shown, d.opts); ok {
		return Result{Status: StatusFail, Finding: what, Fix: fix + " (llm.base_url, OPENAI_BASE_URL)"}
	}
	return Result{Status: StatusFail,
		Finding: fmt.Sprintf("%s did not answer like an OpenAI-compatible API: %s", shown, oneLine(err.Error())),
		Fix:     "llm.base_url must be the API base up to and including /v1 (e.g. http://127.0.0.1:11434/v1)"}
}

func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// ---- shared helpers ----

// describeNetErr is platform.DescribeNetErr with the check's timeout: the
// model check words transport failures as the platforms' checks do.
func describeNetErr(ctx context.Context, err error, shown string, opts Options) (what, fix string, ok bool) {
	return platform.DescribeNetErr(ctx, err, shown, opts.Timeout)
}

// redactURL is platform.ShownURL (config.RedactURL; "" is "the configured
// URL").
func redactURL(raw string) string { return platform.ShownURL(raw) }

// oneLine is platform.OneLine.
func oneLine(s string) string { return platform.OneLine(s) }
