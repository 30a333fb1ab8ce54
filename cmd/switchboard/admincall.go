package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// errNoDaemon marks daemonDown's "not running" (nothing listens).
var errNoDaemon = errors.New("the daemon is not running")

// daemonDown turns a failed connection to the admin endpoint into one
// sentence: the usual cause is that the daemon is not running.
func daemonDown(host string, err error) error {
	var op *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial") {
		return fmt.Errorf("%w: nothing answers at %s (start it with `switchboard run`, or check server.listen)", errNoDaemon, host)
	}
	return fmt.Errorf("could not reach the daemon at %s: %w", host, err)
}

// statusError is a non-200 answer of the admin endpoint (daemonRefused's
// explanation, with the HTTP status for callers that branch on it).
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// httpStatus is the status of the daemon's answer err reports (0 if none).
func httpStatus(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	return 0
}

// daemonRefused explains a non-200 answer of the admin endpoint. A 4xx is
// about the request (an unknown job or code): the operator's mistake, exit 2,
// told in the daemon's own words. Refusals of who asks (401, 403) and a rate
// limit (429) are runtime failures, exit 1.
func daemonRefused(status int, body []byte) error {
	text := strings.TrimSpace(string(body))
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests:
		return fmt.Errorf("the daemon refused the admin request: %s", text)
	case status >= 400 && status < 500:
		if text == "" {
			text = http.StatusText(status)
		}
		return usageErr(errors.New(text))
	}
	return fmt.Errorf("the daemon failed (%s): %s", http.StatusText(status), text)
}
