package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// This file is the Graph API client: JSON requests with the bearer token,
// Graph's error envelope as *GraphError, and whether a failed request was
// written (for Ambiguous).

// maxGraphAnswer bounds a Graph API JSON answer.
const maxGraphAnswer = 1 << 20

// GraphError is the Graph API's error answer:
// {"error":{"message","type","code","error_subcode","error_data":{"details"},"fbtrace_id"}}.
type GraphError struct {
	Status     int    // HTTP status
	Code       int    `json:"code"`
	Subcode    int    `json:"error_subcode"`
	Type       string `json:"type"`
	Message    string `json:"message"`
	Details    string `json:"-"`
	RetryAfter time.Duration
}

func (e *GraphError) Error() string {
	s := fmt.Sprintf("graph API answered HTTP %d", e.Status)
	if e.Code != 0 {
		s += fmt.Sprintf(", code %d", e.Code)
	}
	if e.Message != "" {
		s += ": " + oneLine(e.Message)
	}
	if e.Details != "" && e.Details != e.Message {
		s += " (" + oneLine(e.Details) + ")"
	}
	return s
}

// transportError is a request that got no HTTP answer; written says whether
// the request had been sent completely.
type transportError struct {
	err     error
	written bool
}

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// do sends a request with the bearer token and decodes a 2xx JSON answer
// into out (nil: discard).
func (c *Adapter) do(ctx context.Context, method, u string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	var written atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				written.Store(true)
			}
		},
	})
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.opts.AccessToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return &transportError{err: scrubURLError(err), written: written.Load()}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxGraphAnswer))
	if err != nil {
		return &transportError{err: fmt.Errorf("read answer: %w", err), written: true}
	}
	if resp.StatusCode/100 != 2 {
		return graphError(resp, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("graph API answered undecodable JSON: %w", err)
	}
	return nil
}

func (c *Adapter) getJSON(ctx context.Context, u string, out any) error {
	return c.do(ctx, http.MethodGet, u, nil, out)
}

// graphError decodes Graph's error envelope of a non-2xx answer.
func graphError(resp *http.Response, data []byte) *GraphError {
	var env struct {
		Error *struct {
			GraphError
			ErrorData struct {
				Details string `json:"details"`
			} `json:"error_data"`
		} `json:"error"`
	}
	ge := &GraphError{Status: resp.StatusCode}
	if json.Unmarshal(data, &env) == nil && env.Error != nil {
		*ge = env.Error.GraphError
		ge.Status = resp.StatusCode
		ge.Details = env.Error.ErrorData.Details
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			ge.RetryAfter = time.Duration(n) * time.Second
		}
	}
	return ge
}

// scrubURLError drops the URL from a *url.Error (a media URL may carry a
// signed query); the cause stays.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s request: %w", ue.Op, ue.Err)
	}
	return err
}

// pathEscape escapes one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }
