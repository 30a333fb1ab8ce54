package redact

import (
	"regexp"
	"slices"
	"strings"
)

// urlInText matches what looks like an absolute URL inside free text: a
// scheme, "://", and everything up to white space or a quote or bracket that
// usually ends it. Go's HTTP errors quote the URL they failed on
// (Post "http://host/v1/chat/completions?api-key=…": dial tcp …), so the
// quote ends the match there.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>` + "`" + `]+`)

// Text is s with every URL in it passed through URL: for error texts and
// log lines that may carry a configured endpoint (net/http and url.Error
// keep the query and user info of the URL they failed on). Text without a
// URL is returned unchanged.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, func(u string) string {
		// Sentence punctuation after a URL ("(see http://h/x?key=k).") is
		// not part of it.
		trimmed := strings.TrimRight(u, ".,;:!?)]}")
		return URL(trimmed) + u[len(trimmed):]
	})
}

// Error wraps err so that its text goes through Text, with every one of
// secrets (a password a driver may echo outside a URL) replaced by
// "[redacted]"; errors.Is and errors.As still see the wrapped chain. nil
// stays nil, and an error whose text has nothing to hide is returned as is.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := msg
	// Longest first, so that a password is replaced whole before its pieces.
	secrets = slices.Clone(secrets)
	slices.SortStableFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range secrets {
		if sec != "" {
			red = strings.ReplaceAll(red, sec, "[redacted]")
		}
	}
	if red = Text(red); red != msg {
		return &redactedError{err: err, msg: red}
	}
	return err
}

// redactedError is an error whose text was redacted.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }

func (e *redactedError) Unwrap() error { return e.err }
