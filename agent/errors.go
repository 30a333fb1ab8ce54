package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ErrToolProtocol is wrapped by the error of a turn whose model kept answering
// outside the JSON tool protocol after the repair round.
var ErrToolProtocol = errors.New("the model did not answer in the JSON tool protocol")

var (
	errStreamIdle      = errors.New("the model stream sent nothing within the idle timeout")
	errStreamTruncated = errors.New("the model stream ended before a finish reason (connection cut)")
	errFirstChunk      = errors.New("the model sent nothing within the request timeout")
	errCallTimeout     = errors.New("the model call did not finish within the request timeout (llm.timeout)")
)

// Model error kinds (ModelError.Kind).
const (
	KindAuth        = "auth"         // 401
	KindForbidden   = "forbidden"    // 403
	KindNotFound    = "not_found"    // 404
	KindBadRequest  = "bad_request"  // 400 and other 4xx
	KindRateLimited = "rate_limited" // 429
	KindUnavailable = "unavailable"  // 5xx
	KindTimeout     = "timeout"      // no answer in time
	KindNetwork     = "network"      // connection failures, cut streams
)

// ModelError is a failed model call after the retry policy gave up. The
// cause is kept for logs (with the API key redacted); FriendlyError turns it
// into a sentence for the user.
//
// Transient tells a failure worth retrying or failing over (the endpoint
// may answer a moment later, or another endpoint may) from a permanent one
// (the operator must fix the key, the model name or the request): see
// Transient. An error the server reported inside a 200 stream
// (`data: {"error":{…}}`) is classified like the HTTP status it names, or
// by its code and type: model_not_found is permanent, server_error
// transient.
type ModelError struct {
	Kind       string
	Status     int // HTTP status, or the one an in-stream error names; 0 when unknown
	Attempts   int
	RetryAfter time.Duration // what the server asked for on the last attempt
	// Message is the server's own error message (API key redacted, at most
	// maxServerMessage characters), "" when it sent none.
	Message string
	// InStream says the server reported the error inside a 200 stream.
	InStream bool
	Err      error
}

// Transient reports whether the failure may go away by itself: a network
// error, a timeout, a cut stream, HTTP 5xx or 429 (or an in-stream error of
// that kind). Permanent failures (400/401/403/404, model_not_found, an
// invalid key, a context-length error) are false: retrying or asking
// another endpoint with the same request does not help, the operator (or
// the user, with /reset) must act. The provider retries exactly the
// transient ones.
func (e *ModelError) Transient() bool { return transientKind(e.Kind) }

func transientKind(kind string) bool {
	switch kind {
	case KindRateLimited, KindUnavailable, KindTimeout, KindNetwork:
		return true
	}
	return false
}

func (e *ModelError) Error() string {
	return fmt.Sprintf("model call failed (%d attempt(s)): %s: %v", e.Attempts, e.cause(), e.Err)
}

func (e *ModelError) Unwrap() error { return e.Err }

func (e *ModelError) cause() string {
	switch e.Kind {
	case KindAuth:
		return "the model endpoint rejected the API key (HTTP 401)"
	case KindForbidden:
		return "the model endpoint refused access with this API key (HTTP 403)"
	case KindNotFound:
		return "the model endpoint or model was not found (HTTP 404): check llm.base_url and llm.model"
	case KindBadRequest:
		return fmt.Sprintf("the model endpoint rejected the request (HTTP %d)", e.Status)
	case KindRateLimited:
		return "the model endpoint is rate limiting (HTTP 429)"
	case KindUnavailable:
		if e.Status == 0 {
			return "the model endpoint reported an error inside its stream"
		}
		return fmt.Sprintf("the model endpoint failed (HTTP %d)", e.Status)
	case KindTimeout:
		return "the model did not answer in time"
	default:
		return "the model endpoint could not be reached"
	}
}

// friendlyModelError is FriendlyError's sentence for a failed model call.
// A permanent failure names the problem and, when the server gave one, its
// own message (the operator's clue: "model 'x' not found"); a transient one
// asks to try again.
func friendlyModelError(me *ModelError) string {
	said := ""
	if me.Message != "" {
		said = fmt.Sprintf(" The model server said: %q.", me.Message)
	}
	status := ""
	if me.Status > 0 {
		status = fmt.Sprintf(" (HTTP %d)", me.Status)
	}
	switch me.Kind {
	case KindAuth:
		// Not the server's message: it may quote (part of) the key.
		return "The model endpoint rejected the API key; the operator needs to check it."
	case KindForbidden:
		return "The model endpoint refused access" + status + "; the operator needs to check the account or key permissions." + said
	case KindNotFound:
		return "The configured model or endpoint does not exist" + status + "; the operator needs to check llm.model and llm.base_url." + said
	case KindBadRequest:
		return "The model endpoint rejected the request" + status + "; the conversation may be too long — try /reset." + said
	case KindRateLimited:
		return "The model is rate-limited right now" + status + "; please try again in a minute."
	case KindUnavailable:
		if me.Status == 0 {
			return "The model reported an error while answering; please try again in a minute." + said
		}
		return fmt.Sprintf("The model is not answering right now (HTTP %d); please try again in a minute.", me.Status)
	case KindTimeout:
		return "The model did not answer in time; please try again."
	default:
		return "I could not reach the model right now; please try again in a minute."
	}
}

// NotConfiguredReply is FriendlyError's answer when no model is configured
// (ErrModelNotConfigured): what a chat shows, and what `switchboard ask`
// recognizes in the daemon's answer to tell the operator what to set.
const NotConfiguredReply = "I can't answer yet: no model API key is configured. The operator needs to set OPENAI_API_KEY or point llm.base_url at a local model."

// FriendlyError is a sentence suitable for the user of a chat about why a
// turn failed. The full cause stays in err for the logs.
func FriendlyError(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, ErrModelNotConfigured) {
		return NotConfiguredReply
	}
	if errors.Is(err, ErrToolProtocol) {
		return "The model's reply could not be understood; please try again."
	}
	var me *ModelError
	if errors.As(err, &me) {
		return friendlyModelError(me)
	}
	if errors.Is(err, context.Canceled) {
		return "Stopped."
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "This took too long and was stopped; please try again."
	}
	return "Something went wrong while answering; please try again."
}

// classify says what kind of failure err is and whether retrying may help.
func classify(err error) (kind string, status int, retryable bool) {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	var se *StreamError
	if errors.As(err, &se) {
		kind, status = se.classify()
		return kind, status, transientKind(kind)
	}
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode > 0:
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
		status = reqErr.HTTPStatusCode
	}
	if status > 0 {
		kind, retryable := statusKind(status)
		if kind == "" { // a 1xx-3xx answer that is no stream: not a request error
			kind = KindBadRequest
		}
		return kind, status, retryable
	}
	if errors.Is(err, errStreamIdle) || errors.Is(err, errFirstChunk) || errors.Is(err, errCallTimeout) ||
		errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout, 0, true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return KindTimeout, 0, true
	}
	for _, local := range []error{openai.ErrChatCompletionInvalidModel, openai.ErrContentFieldsMisused,
		openai.ErrReasoningModelMaxTokensDeprecated, openai.ErrReasoningModelLimitationsOther,
		openai.ErrReasoningModelLimitationsLogprobs, openai.ErrReasoningToolsRequireResponses,
		openai.ErrReasoningSamplingUnsupported, openai.ErrReasoningEffortUnsupported} {
		if errors.Is(err, local) { // refused by the client library before sending: retrying cannot help
			return KindBadRequest, 0, false
		}
	}
	// Everything else without an HTTP status is a transport problem: refused
	// connections, resets, cut streams (io.ErrUnexpectedEOF, errStreamTruncated),
	// undecodable chunks. Retrying may help.
	return KindNetwork, 0, true
}

// rejectsTools reports whether err is an endpoint refusing the `tools`
// parameter (auto protocol falls back to json then), as an HTTP 400 or as a
// bad-request error inside a 200 stream (LiteLLM, OpenRouter).
func rejectsTools(err error) bool {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	var se *StreamError
	var msg string
	switch {
	case errors.As(err, &se):
		if kind, _ := se.classify(); kind != KindBadRequest {
			return false
		}
		msg = se.APIError.Message
		if se.APIError.Param != nil {
			msg += " " + *se.APIError.Param
		}
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode == http.StatusBadRequest:
		msg = apiErr.Message
		if apiErr.Param != nil {
			msg += " " + *apiErr.Param
		}
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode == http.StatusBadRequest:
		msg = string(reqErr.Body)
	default:
		return false
	}
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "tool") || strings.Contains(msg, "function")
}

// redactedError hides a secret in the text of the error it wraps.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.secret, "[redacted]")
}

func (e *redactedError) Unwrap() error { return e.err }

func redact(err error, secret string) error {
	if err == nil || len(secret) < 6 || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{err: err, secret: secret}
}

// StreamError is an error the server sent inside a 200 stream:
// `data: {"error":{…}}` (OpenAI, OpenRouter, LiteLLM, newer vLLM), an
// ordinary chunk with an "error" field (OpenRouter), vLLM's older
// `data: {"object":"error",…}`, or an error body instead of events
// (Ollama). There is no HTTP status: classify reads the one its code
// names (LiteLLM and vLLM send the status as the code, OpenRouter too) or
// its code and type (model_not_found, invalid_api_key, server_error…).
type StreamError struct {
	APIError *openai.APIError
}

func (e *StreamError) Error() string {
	a := e.APIError
	var b strings.Builder
	b.WriteString("the model server reported an error in its stream: ")
	b.WriteString(a.Message)
	if a.Code != nil && fmt.Sprint(a.Code) != "" {
		fmt.Fprintf(&b, " (code %v", a.Code)
		if a.Type != "" {
			fmt.Fprintf(&b, ", type %s", a.Type)
		}
		b.WriteString(")")
	} else if a.Type != "" {
		fmt.Fprintf(&b, " (type %s)", a.Type)
	}
	return b.String()
}

func (e *StreamError) Unwrap() error { return e.APIError }

// classify is the kind of the in-stream error, and its status when its code
// is one (0 otherwise). An error that names neither a status nor a known
// code or type is taken as the server's failure (transient): the stream had
// started, so the request itself was accepted.
func (e *StreamError) classify() (kind string, status int) {
	a := e.APIError
	switch c := a.Code.(type) {
	case int:
		status = c
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(c)); err == nil {
			status = n
		}
	}
	if status >= 100 && status <= 599 {
		if k, _ := statusKind(status); k != "" {
			return k, status
		}
	}
	status = 0
	for _, name := range []string{fmt.Sprint(a.Code), a.Type} {
		if k, ok := streamErrorKinds[strings.ToLower(strings.TrimSpace(name))]; ok {
			return k, 0
		}
	}
	return KindUnavailable, 0
}

// streamErrorKinds maps the codes and types servers put in error objects
// (OpenAI's codes and types, Ollama's and LiteLLM's types, vLLM's exception
// names) to a kind.
var streamErrorKinds = map[string]string{
	"model_not_found": KindNotFound, "not_found_error": KindNotFound, "notfounderror": KindNotFound,
	"invalid_api_key": KindAuth, "authentication_error": KindAuth, "authenticationerror": KindAuth,
	"unauthorized":     KindAuth,
	"permission_error": KindForbidden, "permissiondeniederror": KindForbidden, "insufficient_quota": KindForbidden,
	"context_length_exceeded": KindBadRequest, "invalid_request_error": KindBadRequest,
	"badrequesterror": KindBadRequest, "string_above_max_length": KindBadRequest,
	"content_filter": KindBadRequest, "content_policy_violation": KindBadRequest,
	"rate_limit_exceeded": KindRateLimited, "rate_limit_error": KindRateLimited, "ratelimiterror": KindRateLimited,
	"server_error": KindUnavailable, "api_error": KindUnavailable, "internal_server_error": KindUnavailable,
	"internalservererror": KindUnavailable, "overloaded_error": KindUnavailable, "service_unavailable": KindUnavailable,
	"timeout": KindTimeout,
}

// statusKind is the kind of an HTTP error status and whether retrying may
// help; "" for a status that is no error.
func statusKind(status int) (kind string, retryable bool) {
	switch {
	case status < 400:
		return "", false
	case status == http.StatusUnauthorized:
		return KindAuth, false
	case status == http.StatusForbidden:
		return KindForbidden, false
	case status == http.StatusNotFound:
		return KindNotFound, false
	case status == http.StatusTooManyRequests:
		return KindRateLimited, true
	case status == http.StatusRequestTimeout:
		return KindTimeout, true
	case status >= 500:
		return KindUnavailable, true
	default:
		return KindBadRequest, false
	}
}

// maxServerMessage bounds the server's message kept in a ModelError.
const maxServerMessage = 300

// serverMessage is the message the server sent with err ("" for none, or
// for one that only repeats the HTTP status text), with secret redacted and
// cut at maxServerMessage characters; inStream says it came in a stream.
func serverMessage(err error, status int, secret string) (msg string, inStream bool) {
	var se *StreamError
	var apiErr *openai.APIError
	switch {
	case errors.As(err, &se):
		msg, inStream = se.APIError.Message, true
	case errors.As(err, &apiErr):
		msg = apiErr.Message
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if msg == "" || strings.EqualFold(msg, http.StatusText(status)) {
		return "", inStream
	}
	if len(secret) >= 6 {
		msg = strings.ReplaceAll(msg, secret, "[redacted]")
	}
	if r := []rune(msg); len(r) > maxServerMessage {
		msg = string(r[:maxServerMessage]) + "…"
	}
	return msg, inStream
}
