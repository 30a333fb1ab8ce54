package platform

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-bot/switchboard/internal/redact"
)

// This file holds what a platform's doctor checks (Descriptor.Doctor,
// Descriptor.WebhookDoctor) share with internal/doctor's own: the wording of
// network failures, one-line server messages, URLs shown without
// credentials, and a result built from several observations.

// DescribeNetErr classifies a transport failure (no HTTP answer at all):
// what happened to the request to shown, and the fix. ok is false when err
// is not a transport failure. timeout is the check's bound (Deps.Timeout).
func DescribeNetErr(ctx context.Context, err error, shown string, timeout time.Duration) (what, fix string, ok bool) {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var opErr *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot connect to %s: connection refused", shown),
			"start the server or correct the URL", true
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || isTimeout(err):
		return fmt.Sprintf("no answer from %s within %s", shown, timeout),
			"check that the host is up and reachable from here (firewall, proxy, HTTPS_PROXY) or correct the URL", true
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve %s (%s)", dnsErr.Name, shown),
			"check the host name and this machine's DNS", true
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		return fmt.Sprintf("TLS certificate of %s is not trusted", shown),
			"install the CA certificate the server uses, or fix the host name in the URL", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.As(err, &opErr):
		return fmt.Sprintf("cannot reach %s: %s", shown, OneLine(rootCause(err).Error())),
			"check the network path to the host or correct the URL", true
	}
	return "", "", false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// ShownURL is how a check names a configured URL: credentials in the user
// info and query become "[redacted]" (redact.URL, as config.RedactURL);
// an empty one is "the configured URL".
func ShownURL(raw string) string {
	if raw == "" {
		return "the configured URL"
	}
	return redact.URL(raw)
}

// OneLine keeps a server or library message to one short line.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// Findings builds one CheckResult from several observations: the worst
// status wins, findings and the fixes of what is not ok are joined in order.
type Findings struct {
	status   string
	findings []string
	fixes    []string
}

// Add records one observation.
func (f *Findings) Add(status, finding, fix string) {
	if StatusRank(status) > StatusRank(f.status) {
		f.status = status
	}
	if finding != "" {
		f.findings = append(f.findings, finding)
	}
	if fix != "" && status != StatusOK {
		f.fixes = append(f.fixes, fix)
	}
}

// Result is the observations as one result (ok when there were none).
func (f *Findings) Result() CheckResult {
	st := f.status
	if st == "" {
		st = StatusOK
	}
	return CheckResult{Status: st, Finding: strings.Join(f.findings, "; "), Fix: strings.Join(f.fixes, "; ")}
}

// StatusRank orders statuses: fail > warn > ok > skip or none.
func StatusRank(s string) int {
	switch s {
	case StatusFail:
		return 3
	case StatusWarn:
		return 2
	case StatusOK:
		return 1
	}
	return 0
}

// Client is d.HTTPClient, or a new client with the default transport when
// it is nil.
func (d Deps) Client() *http.Client {
	if d.HTTPClient != nil {
		return d.HTTPClient
	}
	return &http.Client{}
}
