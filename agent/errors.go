package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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
type ModelError struct {
	Kind       string
	Status     int // HTTP status, 0 when there was no HTTP answer
	Attempts   int
	RetryAfter time.Duration // what the server asked for on the last attempt
	Err        error
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
		return fmt.Sprintf("the model endpoint failed (HTTP %d)", e.Status)
	case KindTimeout:
		return "the model did not answer in time"
	default:
		return "the model endpoint could not be reached"
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
		switch me.Kind {
		case KindAuth:
			return "The model endpoint rejected the API key; the operator needs to check it."
		case KindForbidden:
			return "The model endpoint refused access (HTTP 403); the operator needs to check the account or key permissions."
		case KindNotFound:
			return "The configured model or endpoint does not exist (HTTP 404); the operator needs to check llm.model and llm.base_url."
		case KindBadRequest:
			return fmt.Sprintf("The model endpoint rejected the request (HTTP %d); the conversation may be too long — try /reset.", me.Status)
		case KindRateLimited:
			return "The model is rate-limited right now (HTTP 429); please try again in a minute."
		case KindUnavailable:
			return fmt.Sprintf("The model is not answering right now (HTTP %d); please try again in a minute.", me.Status)
		case KindTimeout:
			return "The model did not answer in time; please try again."
		default:
			return "I could not reach the model right now; please try again in a minute."
		}
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
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode > 0:
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
		status = reqErr.HTTPStatusCode
	}
	if status > 0 {
		switch {
		case status == http.StatusUnauthorized:
			return KindAuth, status, false
		case status == http.StatusForbidden:
			return KindForbidden, status, false
		case status == http.StatusNotFound:
			return KindNotFound, status, false
		case status == http.StatusTooManyRequests:
			return KindRateLimited, status, true
		case status == http.StatusRequestTimeout:
			return KindTimeout, status, true
		case status >= 500:
			return KindUnavailable, status, true
		default:
			return KindBadRequest, status, false
		}
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
// parameter (auto protocol falls back to json then).
func rejectsTools(err error) bool {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	var msg string
	switch {
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
